"""A region's record (rclify/transform/region_records.py): its fate changes through its own methods,
and its JSON keeps the report's keys, in the report's order, whatever happened to it."""

from rclify.transform.refusals import REASONS, Reason
from rclify.transform.region_records import WhyHybrid, RegionRecord, Section

WHERE = ["file", "line", "end_line", "function", "lock", "via", "kind", "lock_expr", "status"]
SECTION = ["runs_on_caller_thread", "thread_bound_because", "waits_on_condvar", "exits", "context", "hoisted",
           "windows", "loop_carried", "from_macro_expansion", "variadic_reads_before", "shapes"]
REFUSAL = ["reason", "reason_line", "why", "other_reasons"]


def extracted() -> RegionRecord:
    record = RegionRecord("a.c", 10, "f", "m", "", "lock", "m", end_line=14, function_extracted="rclify_cs_f_0")
    record.section = Section(False, "", False, 1, ["x"], [], 0, False, False, False, ["windows"])
    return record


def hybrid() -> RegionRecord:
    record = RegionRecord("a.c", 20, "g", "m", "LOCK", "lock", "m", end_line=22)
    record.why_hybrid = WhyHybrid.of(Reason.UNRECOGNIZED_LOCK_SHAPE, 21, [str(Reason.HAND_OVER_HAND)])
    record.why_hybrid.unrecognized = "a lock through an opaque call"
    return record


def test_an_extracted_record_lists_its_section_after_its_function():
    record = extracted()
    assert record.status == "extracted" and record.extracted
    assert list(record.to_json()) == [*WHERE, "function_extracted", *SECTION]


def test_a_placement_override_follows_the_shapes_and_names_its_section():
    record = extracted()
    record.section.placement_override = {"runs": "on-caller", "reason": "r", "section": "f_0"}
    assert list(record.to_json())[-2:] == ["shapes", "placement_override"]
    assert record.overridden_section == "f_0" and hybrid().overridden_section is None


def test_a_hybrid_record_has_its_refusal_where_an_extracted_one_has_its_section():
    data = hybrid().to_json()
    assert list(data) == [*WHERE, *REFUSAL, "unrecognized"]
    assert data["status"] == "hybrid" and data["reason"] == "unrecognized-lock-shape" and data["reason_line"] == 21
    assert data["why"] == REASONS[Reason.UNRECOGNIZED_LOCK_SHAPE]


def test_left_hybrid_after_extraction_it_keeps_its_section_and_loses_its_function():
    record = extracted()
    record.leave_hybrid(Reason.GENERATED_CODE_DOES_NOT_COMPILE, "a.c:12: error")
    data = record.to_json()
    assert list(data) == [*WHERE, *SECTION, *REFUSAL]  # no function_extracted: none was written
    assert (data["status"], data["reason"], data["reason_line"], data["why"], data["other_reasons"]) == \
        ("hybrid", "generated-code-does-not-compile", 10, "a.c:12: error", [])


def test_left_hybrid_again_its_earlier_reasons_move_to_the_others():
    record = hybrid()
    record.leave_hybrid(Reason.FILE_LEFT_UNCHANGED, "does not compile")
    data = record.to_json()
    assert list(data) == [*WHERE, *REFUSAL, "unrecognized"]
    assert data["reason"] == "file-left-unchanged" and data["reason_line"] == 20
    assert data["other_reasons"] == ["hand-over-hand", "unrecognized-lock-shape"]


def test_renumbered_its_function_has_the_new_name():
    record = extracted()
    record.renumbered("rclify_cs_f_1")
    assert record.to_json()["function_extracted"] == "rclify_cs_f_1"


def test_its_lock_id_comes_last_and_a_cxx_call_has_no_end_line():
    record = RegionRecord("a.cpp", 3, "C::f", "m", "", "lock", "m", why_hybrid=WhyHybrid.of(Reason.CXX_SOURCE, 3))
    record.lock_id = "a_cpp_m"
    assert list(record.to_json()) == [*[k for k in WHERE if k != "end_line"], *REFUSAL, "lock_id"]
