from __future__ import annotations

from weft_core.models import Entity, EntityField
from weft_tasks.grounding.distractors import near_duplicate

CUSTOMER = Entity(
    name="customer",
    key="customer_id",
    fields=[
        EntityField(name="customer_id", primary_key=True),
        EntityField(name="name"),
        EntityField(name="email", unique=True),
        EntityField(name="segment", enum=["smb", "enterprise"]),
        EntityField(name="owner_id", foreign_key="employee.employee_id"),
    ],
)
ROW = {
    "customer_id": "CUS-0001",
    "name": "Alice Haddad",
    "email": "alice@example.com",
    "segment": "smb",
    "owner_id": "EMP-0002",
}


def test_twin_is_a_new_row_that_reads_almost_the_same() -> None:
    twin = near_duplicate(CUSTOMER, ROW, [ROW], {"alice@example.com", "Alice Haddad"}, 0)
    assert twin is not None
    assert twin["customer_id"] == "CUS-0900"  # a key the table never had, same shape
    assert twin["name"] == "Alice J. Haddad" and twin["email"] == "alice.1@example.com"
    # what a filter or a list matches on is kept: same segment, same owner
    assert twin["segment"] == "smb" and twin["owner_id"] == "EMP-0002"


def test_twins_never_collide_with_each_other() -> None:
    first = near_duplicate(CUSTOMER, ROW, [ROW], set(), 0)
    assert first is not None
    second = near_duplicate(CUSTOMER, ROW, [ROW, first], set(), 0)
    assert second is not None
    assert second["customer_id"] != first["customer_id"] and second["email"] != first["email"]


def test_no_twin_without_a_name_to_confuse() -> None:
    ledger = Entity(
        name="entry",
        key="id",
        fields=[
            EntityField(name="id", type="integer", primary_key=True),
            EntityField(name="amount", type="number"),
        ],
    )
    assert near_duplicate(ledger, {"id": 1, "amount": 3.5}, [{"id": 1}], set(), 0) is None


ORDER = Entity(
    name="order",
    key="order_id",
    fields=[
        EntityField(name="order_id", primary_key=True),
        EntityField(name="customer_id", foreign_key="customer.customer_id"),
        EntityField(name="quantity", type="integer"),
        EntityField(name="shipping_address"),
        EntityField(name="status", enum=["pending", "shipped"]),
    ],
)


def test_a_nameless_record_is_twinned_through_the_parent_it_belongs_to() -> None:
    row = {
        "order_id": "ORD-0001",
        "customer_id": "CUS-0001",
        "quantity": 2,
        "shipping_address": "12 Rue de Lyon",
        "status": "pending",
    }
    twin = near_duplicate(ORDER, row, [row], {"CUS-0001"}, 0)
    assert twin is not None and twin["order_id"] == "ORD-0900"
    # the same customer and status, one visible detail apart
    assert twin["customer_id"] == "CUS-0001" and twin["status"] == "pending"
    assert twin["shipping_address"] == "12 Rue de Lyon (2)" and twin["quantity"] == 2
    # no text to change: the amount moves instead
    bare = {**row, "shipping_address": None}
    twin = near_duplicate(ORDER, bare, [bare], set(), 1)
    assert twin is not None and twin["quantity"] == 4 and twin["order_id"] == "ORD-0901"
    # nothing but the parent and a lifecycle value: still a second order of that customer
    account = Entity(
        name="account",
        key="account_id",
        fields=[
            EntityField(name="account_id", primary_key=True),
            EntityField(name="customer_id", foreign_key="customer.customer_id"),
            EntityField(name="status", enum=["active", "frozen"]),
        ],
    )
    acc = {"account_id": "ACC-0001", "customer_id": "CUS-0001", "status": "active"}
    twin = near_duplicate(account, acc, [acc], set(), 0)
    assert twin == {"account_id": "ACC-0900", "customer_id": "CUS-0001", "status": "active"}
