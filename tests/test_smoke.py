from conftest import EXAMPLE_GEM


def test_example_gem_add_note(open_bench):
    b = open_bench(EXAMPLE_GEM)
    r = b.call("add_note", {"title": "hi"})
    assert r.ok, r.error
    assert list(b.data("notes")["title"]) == ["hi"]
