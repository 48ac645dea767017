#!/usr/bin/env bash
# Atomic-turn GRPO on OpenRLHF 0.11.2 for a Qwen3-8B-class SFT checkpoint on one 8-GPU node
# (preset "8b": colocated actor/ref/vLLM, ZeRO-3, G=16, 16 tasks per step, TIS [0.5, 2], k3 KL loss).
# UNTESTED: written and dry-run checked on CPU (OpenRLHF's own parser accepts the arguments); no GPU
# was available to run it. Needs: pip install 'weft-train[openrlhf]' 'openrlhf[vllm]' and flash-attn.
# Usage: launch_8b.sh MODEL TASKS_DIR OUT_DIR MEGAMCP_URL ADMIN_TOKEN [--dry-run] [-- OPENRLHF FLAGS]
set -euo pipefail
if [ $# -lt 5 ]; then sed -n 2,6p "$0"; exit 2; fi
MODEL=$1 TASKS=$2 OUT=$3 URL=$4 TOKEN=$5
shift 5
exec python -m weft_train.openrlhf.launch --preset 8b --model "$MODEL" --tasks-dir "$TASKS" \
  --out "$OUT" --megamcp-url "$URL" --admin-token "$TOKEN" "$@"
