"""A complete run's verdicts are kept whole and reused while nothing changed; anything less is not kept."""

from __future__ import annotations

import json
from dataclasses import replace

from warnonce_guard.mutations.records import NOT_RUN, UNREACHED, RunResult
from warnonce_guard.mutations.run import read_result, store_result
from warnonce_guard.mutations.workspace import Workspace

from tests.records_support import every_status_result, sample_result


def test_a_result_round_trips_through_json_unchanged() -> None:
    for result in (sample_result(), every_status_result()):
        assert RunResult.from_json(json.loads(json.dumps(result.to_json()))) == result


def test_a_final_result_is_stored_and_read_back(ws: Workspace) -> None:
    result = sample_result()
    result.baselines = [b for b in result.baselines if b.status != UNREACHED]
    assert result.final
    store_result(ws, result)
    assert read_result(ws) == result


def test_a_result_waiting_for_a_verdict_is_not_stored_and_removes_an_old_one(ws: Workspace) -> None:
    done = sample_result()
    done.baselines = [b for b in done.baselines if b.status != UNREACHED]
    store_result(ws, done)
    pending = replace(done, mutants=[replace(done.mutants[0], status=NOT_RUN), *done.mutants[1:]])
    assert not pending.final
    store_result(ws, pending)
    assert read_result(ws) is None and not ws.result_file.exists()


def test_an_unreached_site_keeps_a_result_from_being_stored(ws: Workspace) -> None:
    result = every_status_result()
    assert result.sites_with(UNREACHED) and not result.final  # its environment may change, not its fingerprint
    store_result(ws, result)
    assert not ws.result_file.exists()


def test_a_stored_result_that_does_not_read_back_is_ignored(ws: Workspace) -> None:
    for text in ("", "{", "{}", '{"baselines": 1}'):
        ws.result_file.write_text(text)
        assert read_result(ws) is None
