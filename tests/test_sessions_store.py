from pathlib import Path

from dcode.agent.sessions import SessionStore, title_from_prompt


def test_create_record_list_delete(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    assert store.list() == [] and store.latest() is None
    store.create("aaaa11112222", tmp_path / "one", "openai:gpt-5.1")
    store.create("bbbb11112222", tmp_path / "two", "deepseek:deepseek-chat")
    store.record_turn("aaaa11112222", prompt="\n  Fix the failing test in parser.py\nmore", model="openai:gpt-5.1",
                      message_count=4, input_tokens=100, output_tokens=20, context_tokens=120)
    store.record_turn("aaaa11112222", prompt="second prompt", model="openai:gpt-5.1",
                      message_count=8, input_tokens=50, output_tokens=5, context_tokens=175)
    info = store.get("aaaa")
    assert info is not None
    assert info.title == "Fix the failing test in parser.py"
    assert (info.message_count, info.input_tokens, info.output_tokens, info.context_tokens) == (8, 150, 25, 175)
    assert store.latest().id == "aaaa11112222"
    assert store.latest(cwd=tmp_path / "two").id == "bbbb11112222"
    assert [s.id for s in store.list(search="parser")] == ["aaaa11112222"]
    assert store.get("zzzz") is None
    assert store.delete("bbbb11112222") and not store.delete("bbbb11112222")
    assert [s.id for s in store.list()] == ["aaaa11112222"]


def test_ambiguous_prefix_is_not_a_match(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    store.create("abc111", tmp_path, "m")
    store.create("abc222", tmp_path, "m")
    assert store.get("abc") is None and store.get("abc1").id == "abc111"


def test_title_is_first_nonblank_line_capped() -> None:
    assert title_from_prompt("\n\n  hello  \nworld") == "hello"
    assert len(title_from_prompt("x" * 500)) == 80
