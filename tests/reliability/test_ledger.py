"""The side-effect ledger is the proof behind "zero lost, zero duplicated": show it can fail.

If the audit could not see a duplicate, a lost effect or a misrouted answer, every load and
fault scenario would pass vacuously. These cases feed it each defect on purpose.
"""

from __future__ import annotations

import os
from pathlib import Path

from ._ledger import SideEffectLedger


def test_audit_of_a_clean_run(tmp_path: Path) -> None:
    ledger = SideEffectLedger(tmp_path / "ledger.db")
    for key in ("a", "b"):
        ledger.record(call_key=key, answered_key=key, tool="approve_write")
    audit = ledger.audit(call_keys=["a", "b"], completed=["a", "b"])
    assert audit.effects == 2
    assert (audit.lost, audit.duplicated, audit.misrouted, audit.strangers) == ((), (), (), ())


def test_audit_sees_duplicates_lost_misrouted_and_strangers(tmp_path: Path) -> None:
    ledger = SideEffectLedger(tmp_path / "ledger.db")
    ledger.record(call_key="twice", answered_key="twice", tool="approve_write")
    ledger.record(call_key="twice", answered_key="twice", tool="approve_write")
    ledger.record(call_key="crossed", answered_key="someone-else", tool="approve_write")
    ledger.record(call_key="unknown", answered_key="unknown", tool="approve_write")
    audit = ledger.audit(
        call_keys=["twice", "crossed", "never"], completed=["twice", "crossed", "never"]
    )
    assert audit.duplicated == ("twice",)
    assert audit.lost == ("never",)
    assert audit.misrouted == ("crossed",)
    assert audit.strangers == ("unknown",)
    assert audit.effects == 3


def test_inflight_marks_name_the_calls_a_killed_process_abandoned(tmp_path: Path) -> None:
    ledger = SideEffectLedger(tmp_path / "ledger.db")
    ledger.enter(call_key="left")
    ledger.enter(call_key="abandoned")
    ledger.leave(call_key="left")
    assert ledger.inflight(pid=os.getpid()) == ("abandoned",)
    assert ledger.entered_by(call_key="abandoned") == (os.getpid(),)
    assert ledger.inflight(pid=os.getpid() + 1) == ()
