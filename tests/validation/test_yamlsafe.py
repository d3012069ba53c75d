"""Reading hand-written YAML: one line for unreadable input, bounded depth and aliases."""

import pytest

from multisched.validation import YAMLInputError, decode, load_all
from multisched.validation.limits import YAML_MAX_ALIASED, YAML_MAX_DEPTH


def _bomb(levels: int = 9, fan: int = 10) -> str:
    lines = ["a0: &a0 [" + ", ".join(["x"] * fan) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]")
    return "\n".join(lines) + "\n"


def test_anchor_bomb_is_refused_before_expanding() -> None:
    with pytest.raises(YAMLInputError, match=f"aliases expand to more than {YAML_MAX_ALIASED:,}"):
        load_all(_bomb())


def test_a_few_aliases_are_fine() -> None:
    docs = load_all("base: &b {cpu: 1}\nnode: {allocatable: *b}\n")
    assert docs == [{"base": {"cpu": 1}, "node": {"allocatable": {"cpu": 1}}}]


@pytest.mark.parametrize(
    "text",
    ["a: " + "[" * 1000 + "]" * 1000, "".join("  " * i + f"k{i}:\n" for i in range(1000)) + "v"],
)
def test_deep_nesting_is_refused_without_recursion_error(text: str) -> None:
    with pytest.raises(YAMLInputError, match=f"nested more than {YAML_MAX_DEPTH} levels deep"):
        load_all(text)


def test_nesting_within_bound_loads() -> None:
    depth = YAML_MAX_DEPTH - 1
    assert load_all("[" * depth + "]" * depth)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"a: \xff\n", "not UTF-8 text (byte 0xff at offset 3)"),
        ("a: é\n".encode("latin-1"), "not UTF-8 text (byte 0xe9 at offset 3)"),
        ("a: 1\n".encode("utf-16"), "not UTF-8 text (byte 0xff at offset 0)"),
    ],
)
def test_non_utf8_is_one_line(data: bytes, expected: str) -> None:
    with pytest.raises(YAMLInputError) as exc:
        decode(data)
    assert str(exc.value) == expected


def test_utf8_bom_is_accepted() -> None:
    assert load_all(decode("\ufeffa: 1\n".encode())) == [{"a": 1}]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: [\n", "not valid YAML: line 2, column 1: expected the node content"),
        ("a: *nope\n", "not valid YAML: line 1, column 4: found undefined alias 'nope'"),
        ("a: \x00\n", "not valid YAML: "),
    ],
)
def test_syntax_errors_are_one_line(text: str, expected: str) -> None:
    with pytest.raises(YAMLInputError) as exc:
        load_all(text)
    assert str(exc.value).startswith(expected)
    assert "\n" not in str(exc.value)


def test_timestamps_stay_strings_as_kubernetes_reads_them() -> None:
    assert load_all("t: 2024-01-01T00:00:00Z\n") == [{"t": "2024-01-01T00:00:00Z"}]


# --- the libyaml fast path refuses what the bounded reader refuses -------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from multisched.validation import yamlsafe  # noqa: E402
from multisched.validation.yamlsafe import json_like  # noqa: E402


def _outcome(load: object, text: str) -> object:
    try:
        return load(text)  # type: ignore[operator]
    except YAMLInputError as exc:
        return ("refused", str(exc))


def test_plain_cluster_text_takes_the_fast_path_and_reads_the_same() -> None:
    text = (
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {app: web}}\n"
        "spec:\n  containers:\n  - name: c\n    resources:\n      requests: {cpu: 100m}\n"
        '  tolerations: []\n  nodeSelector: {}\n---\n---\n2: two\ntrue: "y"\nnull: ~\n'
        "f: 1.5\nt: 2024-01-01T00:00:00Z\ns: 'quoted # not a comment'\n"
    )
    fast = yamlsafe._fast_load(text)
    assert fast is not None
    docs, plain_keys = fast
    assert docs == yamlsafe._bounded_load(text)
    assert not plain_keys  # 2, true and null keys: read as JSON would have them
    assert load_all(text, json_keys=True)[2] == {
        "2": "two",
        "true": "y",
        "null": None,
        "f": 1.5,
        "t": "2024-01-01T00:00:00Z",
        "s": "quoted # not a comment",
    }


@pytest.mark.parametrize(
    "text",
    [
        _bomb(),
        "base: &b {cpu: 1}\nnode: {allocatable: *b}\n",
        "a: !!set {x, y}\n",
        "a: !!omap [{b: 1}]\n",
        "base: {x: 1}\nm:\n  <<: {y: 2}\n",
        "a: 'bell \x07'\n",
    ],
)
def test_anchors_tags_merges_and_control_characters_take_the_bounded_reader(text: str) -> None:
    assert yamlsafe._fast_load(text) is None
    assert _outcome(load_all, text) == _outcome(yamlsafe._bounded_load, text)


@pytest.mark.parametrize("depth", range(YAML_MAX_DEPTH - 3, YAML_MAX_DEPTH + 4))
@pytest.mark.parametrize("style", ["compact", "indented", "flow"])
def test_depth_bound_is_the_same_on_both_paths(depth: int, style: str) -> None:
    if style == "compact":
        text = "- " * (depth - 1) + "x\n"
    elif style == "indented":
        text = "".join("  " * i + f"k{i}:\n" for i in range(depth - 1)) + "  " * (depth - 1) + "v\n"
    else:
        text = "[" * (depth - 1) + "x" + "]" * (depth - 1) + "\n"
    slow = _outcome(yamlsafe._bounded_load, text)
    assert _outcome(load_all, text) == slow
    if depth > YAML_MAX_DEPTH:
        assert isinstance(slow, tuple) and "nested more than" in slow[1]
        assert yamlsafe._fast_load(text) is None
    else:
        assert yamlsafe._fast_load(text) == (slow, True)


def test_nesting_bound_holds_for_compact_and_flow_collections() -> None:
    assert yamlsafe._within_c_limit("- " * 100 + "x\n")
    assert not yamlsafe._within_c_limit("- " * 400 + "x\n")
    assert not yamlsafe._within_c_limit("a: " + "[" * 1000 + "]" * 1000 + "\n")
    for text in [
        "- - - - a: [[b]]\n",
        "a:\n- b:\n  - {c: [d]}\n",
        "---\nk:\n  - [[x], {y: [z]}]\n",
    ]:
        assert yamlsafe.nesting_bound(text) >= _depth(yamlsafe._bounded_load(text)[0])


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 1


def test_deep_text_past_the_c_bound_never_reaches_libyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_args: object) -> None:
        raise AssertionError("libyaml was handed unbounded nesting")

    monkeypatch.setattr(yamlsafe, "_CLoader", boom)
    text = "- " * 2000 + "x\n"
    with pytest.raises(YAMLInputError, match="nested more than"):
        load_all(text)


def test_node_bound_is_the_same_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlsafe, "YAML_MAX_NODES", 50)
    text = "items:\n" + "".join(f"- {i}\n" for i in range(60))
    assert yamlsafe._fast_load(text) is None
    with pytest.raises(YAMLInputError, match="expands to more than 50 values"):
        load_all(text)


def test_non_utf8_that_would_read_fast_is_refused(tmp_path: object) -> None:
    from pathlib import Path

    from multisched.validation import InputErrors, read_documents

    path = Path(str(tmp_path)) / "c.yaml"
    path.write_bytes(b"apiVersion: v1\nkind: Node\nmetadata:\n  name: n\xe9\n")
    with pytest.raises(InputErrors) as exc:
        read_documents(path)
    assert str(exc.value) == "c.yaml: not UTF-8 text (byte 0xe9 at offset 45)"


@pytest.mark.parametrize(
    "text", ["a: [\n", "a: b: c\n", "- a\nb: c\n", "a:\n\tb: c\n", "'unterminated\n", "{a: 1\n"]
)
def test_syntax_errors_read_the_same_on_both_paths(text: str) -> None:
    slow = _outcome(yamlsafe._bounded_load, text)
    assert isinstance(slow, tuple)
    assert _outcome(load_all, text) == slow


_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
_keys = st.text(max_size=6) | st.integers() | st.booleans() | st.none()
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(_json, st.sampled_from([None, False, True]))
def test_fast_path_reads_what_the_bounded_reader_reads(value: object, flow: bool | None) -> None:
    import yaml

    text = yaml.safe_dump_all([value, value], default_flow_style=flow, explicit_start=True)
    assert _outcome(load_all, text) == _outcome(yamlsafe._bounded_load, text)
    json_keys = _outcome(lambda t: load_all(t, json_keys=True), text)
    assert json_keys == _outcome(lambda t: [json_like(d) for d in yamlsafe._bounded_load(t)], text)


@pytest.mark.parametrize("text", ["a: 0x_\n", "a: +0b_\n", "a: ._\n", "{0x_: 1}\n"])
def test_numbers_pyyaml_cannot_read_are_strings_not_tracebacks(text: str) -> None:
    value = load_all(text, json_keys=True)[0]
    assert value == yamlsafe._bounded_load(text)[0]
    assert all(isinstance(v, str) or v == 1 for v in value.values())


_YAMLISH = "ab:- \n[]{},'\"#?|>\t.0123e+~%@`=\r\x85\u2028\ufeffyYnNo_x&*!<"


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=_YAMLISH, max_size=30))
def test_fast_path_refuses_and_reads_exactly_as_the_bounded_reader(text: str) -> None:
    # libyaml is laxer in places (tabs, "?" in flow, "|#"): those must not take the fast path.
    assert _outcome(load_all, text) == _outcome(yamlsafe._bounded_load, text)


def test_a_plain_scalar_resolves_alike_however_often_it_repeats() -> None:
    text = "a: yes\nb: 'yes'\nc: yes\nd: [1, '1', 1, 1.0, null, 'null', ~]\n"
    fast = yamlsafe._fast_load(text)
    assert fast is not None
    assert fast[0] == yamlsafe._bounded_load(text)
    assert fast[0] == [
        {"a": True, "b": "yes", "c": True, "d": [1, "1", 1, 1.0, None, "null", None]}
    ]
