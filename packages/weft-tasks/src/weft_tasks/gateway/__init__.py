"""The capture gateway (token-exact model calls of any harness) and what is built from its
records: harness transcripts and prefix-merged token sequences."""

from weft_tasks.gateway.app import FORCED_FIELDS, CaptureGateway
from weft_tasks.gateway.chat_model import GatewayChatModels
from weft_tasks.gateway.merge import MergeReport, TokenSequence, mark_merges, merge_calls
from weft_tasks.gateway.reply import Reply, SSEParser
from weft_tasks.gateway.stats import CaptureStats, capture_stats
from weft_tasks.gateway.transcript import offered_tools, openai_message, tie_calls, transcript_of

__all__ = [
    "FORCED_FIELDS",
    "CaptureGateway",
    "CaptureStats",
    "GatewayChatModels",
    "MergeReport",
    "Reply",
    "SSEParser",
    "TokenSequence",
    "capture_stats",
    "mark_merges",
    "merge_calls",
    "offered_tools",
    "openai_message",
    "tie_calls",
    "transcript_of",
]
