"""Issue 40's table (and issue 41's Samsung Pay rows): every Apple Pay, Google Pay and Samsung Pay test case (cases.py)
gives the same code and field through every front end: the Swift API, the CLI's decrypt and a one-token batch, the C
ABI (ap_decrypt and a one-token ap_decrypt_batch, called directly), the Python package, the Go binding, the HTTP
service (/v1/decrypt and a one-line /v1/decrypt/batch) and Spark (applepay.spark.decrypt_tokens on local[2]). The
code must be the one the case's source documents; the field the Swift API's, and every front end must agree with
every other. And a token given twice to a front end that judges replays is replayedTransaction the second time,
naming the wallet's own field (header.transactionId for Apple Pay; messageId or the signed message for Google Pay;
cryptogram for Samsung Pay, also when the payment comes again in another wrapper), the same everywhere.

On any difference the failure prints the table of the differing cases x every front end."""
import json
import os
import time
import traceback
from pathlib import Path

import pytest

import frontends

SWIFT = "Swift API"
COLUMNS = [SWIFT, "CLI decrypt", "CLI batch", "C ABI ap_decrypt", "C ABI ap_decrypt_batch", "Python decrypt",
           "Python decrypt_batch", "Go Decrypt", "Go DecryptBatch", "service /v1/decrypt", "service /v1/decrypt/batch",
           "Spark decrypt_tokens"]
# The front ends that judge replays (a token given twice).
JUDGES = ["CLI batch", "C ABI ap_decrypt_batch", "Python decrypt_batch", "Go DecryptBatch", "service /v1/decrypt",
          "service /v1/decrypt/batch", "Spark decrypt_tokens"]


def _run(request, manifest, work):
    """Every column, each front end run once; a front end that fails leaves its error in place of its column."""
    from conftest import _tool

    runs = {
        (SWIFT,): lambda: (frontends.swift_api(manifest, work),),
        ("CLI decrypt",): lambda: (frontends.cli_decrypt(
            _tool("APPLEPAY_CLI", ".build/debug/applepay-decrypt"), manifest, work),),
        ("CLI batch",): lambda: (frontends.cli_batch(
            _tool("APPLEPAY_CLI", ".build/debug/applepay-decrypt"), manifest, work),),
        ("C ABI ap_decrypt", "C ABI ap_decrypt_batch"): lambda: frontends.c_abi(
            request.getfixturevalue("library"), manifest, work),
        ("Python decrypt", "Python decrypt_batch"): lambda: (
            request.getfixturevalue("library"), frontends.python_package(manifest, work))[1],
        ("Go Decrypt", "Go DecryptBatch"): lambda: (
            request.getfixturevalue("library"), frontends.go_binding(manifest, work))[1],
        ("service /v1/decrypt", "service /v1/decrypt/batch"): lambda: frontends.service(
            _tool("APPLEPAY_SERVICE", "Sources/Server/.build/debug/applepay-service"), manifest, work),
        ("Spark decrypt_tokens",): lambda: (frontends.spark_library(request.getfixturevalue("spark"), manifest,
                                                                     work),),
    }
    columns = {}
    for names, run in runs.items():
        start = time.monotonic()
        try:
            for name, column in zip(names, run()):
                columns[name] = column
        except BaseException as error:  # noqa: B902 (an assertion or a crash alike: that front end's column)
            if isinstance(error, KeyboardInterrupt):
                raise
            text = "".join(traceback.format_exception_only(type(error), error)).strip()
            for name in names:
                columns[name] = {"error": text, "trace": traceback.format_exc()}
        # Where the time goes, in a file run.sh prints (pytest captures what a fixture writes).
        if os.environ.get("APPLEPAY_FRONT_END_TIMES"):
            with open(os.environ["APPLEPAY_FRONT_END_TIMES"], "a") as times:
                times.write(f"front-end table: {' and '.join(names)}: {time.monotonic() - start:.1f} s"
                            + (" (FAILED to run)\n" if "error" in columns[names[0]] else "\n"))
    return columns


@pytest.fixture(scope="session")
def table(request, manifest, work):
    columns = _run(request, manifest, work)
    m = json.loads(Path(manifest).read_text())
    cases = {c["id"]: c for g in m["groups"] for c in g["cases"]}
    replays = {r["id"]: r for r in m["replays"]}
    (Path(work) / "table.json").write_text(json.dumps(
        {name: {k: v for k, v in col.items() if k != "trace"} for name, col in columns.items()}, indent=1))
    return cases, replays, columns


def _cell(value):
    if value is None:
        return "-"
    code, field = value
    return code if field is None else f"{code} [{field}]"


def _grid(rows, columns, get, expected=None):
    """A case x front end table: the value most front ends give, then each front end's, "=" where it is that value;
    front ends numbered in the header, a legend below."""
    header = ["case"] + (["expected"] if expected else []) + ["most give"] + [str(i + 1) for i in range(len(columns))]
    body = []
    for row in rows:
        values = [get(name, row) for name in columns]
        present = [v for v in values if v is not None]
        most = max(set(present), key=present.count) if present else None
        body.append([row] + ([expected(row)] if expected else []) + [_cell(most)]
                    + ["=" if v == most and v is not None else _cell(v) for v in values])
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(r, widths)).rstrip() for r in [header] + body]
    legend = [f"{i + 1}: {name}" for i, name in enumerate(columns)]
    return "\n".join(lines + ["", *legend])


def _case_value(columns, name, case_id):
    col = columns.get(name, {})
    return col.get("cases", {}).get(case_id)


def _failed_columns(columns):
    return "".join(f"\n{name} did not run: {col['error']}" for name, col in columns.items() if "error" in col)


def test_the_table_has_every_source(table):
    cases, replays, _ = table
    prefixes = {case_id.split("/")[0] for case_id in cases}
    assert {"apple", "google", "bundled", "google-rules", "samsung", "samsung-rules"} <= prefixes
    assert sum(c["wallet"] == "apple" for c in cases.values()) >= 9 + 6 + 20
    assert sum(c["wallet"] == "google" for c in cases.values()) >= 9 + 16
    assert sum(c["wallet"] == "samsung" for c in cases.values()) >= 2 + 30
    assert {r["wallet"] for r in replays.values()} == {"apple", "google", "samsung"}


def _ran(column, name):
    if "error" in column:
        pytest.fail(f"{name} did not run:\n{column.get('trace', column['error'])}", pytrace=False)


@pytest.mark.parametrize("name", COLUMNS)
def test_each_front_end_gives_every_case_its_code_and_the_swift_apis_field(table, name):
    cases, _, columns = table
    column = columns[name]
    _ran(column, name)
    reference = columns[SWIFT].get("cases", {})
    wrong = []
    for case_id, case in cases.items():
        got = column["cases"].get(case_id)
        if got is None or got[0] not in case["expect"]:
            wrong.append(case_id)
        elif name != SWIFT and (case_id not in reference or got[1] != reference[case_id][1]):
            wrong.append(case_id)
    if wrong:
        pytest.fail(
            f"{name}: {len(wrong)} of {len(cases)} cases differ from the expected code or the Swift API's field:\n"
            + _grid(wrong, COLUMNS, lambda n, row: _case_value(columns, n, row),
                    expected=lambda row: "|".join(cases[row]["expect"]))
            + _failed_columns(columns), pytrace=False)


def test_every_front_end_agrees_with_every_other_on_every_case(table):
    cases, _, columns = table
    ran = [name for name in COLUMNS if "error" not in columns[name]]
    differing = [case_id for case_id in cases if len({_case_value(columns, name, case_id) for name in ran}) != 1]
    if differing or len(ran) != len(COLUMNS):
        pytest.fail(
            f"{len(differing)} of {len(cases)} cases do not give one code and field through every front end that ran:\n"
            + _grid(differing, COLUMNS, lambda n, row: _case_value(columns, n, row)) + _failed_columns(columns),
            pytrace=False)


@pytest.mark.parametrize("name", JUDGES)
def test_a_token_given_twice_is_a_replay_naming_its_wallets_field(table, name):
    _, replays, columns = table
    column = columns[name]
    _ran(column, name)
    wrong = []
    for replay_id, replay in replays.items():
        got = column.get("replays", {}).get(replay_id)
        if not got or len(got) != 2 or got[0] != ("ok", None) or got[1][0] != "replayedTransaction" \
                or got[1][1] not in replay["fields"]:
            wrong.append(replay_id)
    if wrong:
        pytest.fail(
            f"{name}: a token given twice must be ok, then replayedTransaction naming its wallet's field "
            "(Apple Pay: header.transactionId; Google Pay: messageId or signedMessage; Samsung Pay: cryptogram):\n"
            + "\n".join(f"  {r} ({replays[r]['wallet']}): {[_cell(v) for v in column.get('replays', {}).get(r) or []]}"
                        for r in wrong), pytrace=False)


def test_every_judge_names_the_same_field_for_a_replay(table):
    _, replays, columns = table
    ran = [name for name in JUDGES if "error" not in columns[name]]
    differing = {r: {name: _cell((columns[name].get("replays", {}).get(r) or [None, None])[1]) for name in ran}
                 for r in replays}
    differing = {r: v for r, v in differing.items() if len(set(v.values())) != 1}
    if len(ran) != len(JUDGES):
        pytest.fail("".join(f"{name} did not run: {columns[name]['error']}\n" for name in JUDGES if name not in ran),
                    pytrace=False)
    if differing:
        pytest.fail("the second of a token given twice differs between front ends:\n" + "\n".join(
            f"  {r}:\n" + "\n".join(f"    {name}: {cell}" for name, cell in v.items()) for r, v in differing.items()),
            pytrace=False)
