"""Reading hand-written YAML: one line for unreadable input, bounded depth and aliases."""

import pytest

from multisched.validation import YAMLInputError, decode, load_all
from multisched.validation.yamlsafe import MAX_ALIASED, MAX_DEPTH


def _bomb(levels: int = 9, fan: int = 10) -> str:
    lines = ["a0: &a0 [" + ", ".join(["x"] * fan) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]")
    return "\n".join(lines) + "\n"


def test_anchor_bomb_is_refused_before_expanding() -> None:
    with pytest.raises(YAMLInputError, match=f"aliases expand to more than {MAX_ALIASED:,}"):
        load_all(_bomb())


def test_a_few_aliases_are_fine() -> None:
    docs = load_all("base: &b {cpu: 1}\nnode: {allocatable: *b}\n")
    assert docs == [{"base": {"cpu": 1}, "node": {"allocatable": {"cpu": 1}}}]


@pytest.mark.parametrize(
    "text",
    ["a: " + "[" * 1000 + "]" * 1000, "".join("  " * i + f"k{i}:\n" for i in range(1000)) + "v"],
)
def test_deep_nesting_is_refused_without_recursion_error(text: str) -> None:
    with pytest.raises(YAMLInputError, match=f"nested more than {MAX_DEPTH} levels deep"):
        load_all(text)


def test_nesting_within_bound_loads() -> None:
    depth = MAX_DEPTH - 1
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
