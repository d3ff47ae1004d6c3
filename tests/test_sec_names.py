"""Safe names (SEC2; issue #25): a gem id, a resource id, an Ekanos slug or a `gem-workbench new`
name that Windows keeps for a device (CON, PRN, AUX, NUL, COM1–9, LPT1–9, any case, with an
extension) or would change (a trailing dot) is refused with a coded error naming the field, by
every loader, by the resource cache on its own, and by the scaffold for every platform."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import GemBuilder
from test_sec_gem import ECHO, load_error, pointers
from test_sec_resources import DATA, DATA_SHA, past_the_loader

import workbench
from workbench.cli import main as cli_main
from workbench.gem.names import DEVICES, SLUG, slug_problem

RESERVED = ["con", "CON", "Con", "prn", "aux", "nul", "NUL.txt", "con.tar.gz", "com1", "COM9", "lpt1",
            "Lpt9.log", "aux.", "gem."]  # fmt: skip
FINE = ["console", "com10", "com0", "lpt", "auxiliary", "con-x", "nul_1", "x.con", "a.b"]
SCHEMAS = Path(workbench.__file__).parent / "platforms"


@pytest.mark.parametrize("gid", RESERVED)
@pytest.mark.parametrize("platform", ["notochord", "agent"])
def test_SEC2_a_gem_id_windows_reserves_is_E_MANIFEST_at_id(
    gem: GemBuilder, platform: str, gid: str, capsys: Any
) -> None:
    gem.tool("t", ECHO)
    if platform == "agent":
        gem.as_agent("a-1")
    gem.manifest["id"] = gid
    root = gem.write()
    err = load_error(root)
    assert pointers(err) == ["/id"]
    problem = err.details.get("problems", [err.details])[0]
    assert "Windows" in problem["message"] and repr(gid) in problem["message"], problem
    assert cli_main(["check", str(root)]) == 1
    assert "#/id" in capsys.readouterr().err


@pytest.mark.parametrize("gid", FINE)
def test_SEC2_names_that_only_look_like_devices_load(gem: GemBuilder, gid: str) -> None:
    gem.tool("t", ECHO)
    gem.manifest["id"] = gid
    gem.manifest["resources"] = [{"id": gid, "url": "https://x.example/r", "sha256": "0" * 64}]
    workbench.open(gem.write()).close()


@pytest.mark.parametrize("rid", ["con", "Nul.onnx", "lpt3.bin", "model."])
def test_SEC2_a_resource_id_windows_reserves_is_E_MANIFEST(gem: GemBuilder, rid: str) -> None:
    gem.tool("t", ECHO)
    gem.manifest["resources"] = [{"id": rid, "url": "https://x.example/r", "sha256": "0" * 64}]
    assert pointers(load_error(gem.write())) == ["/resources/0/id"]


def test_SEC2_the_resource_cache_refuses_a_reserved_id_on_its_own(
    gem: GemBuilder, opened: Callable, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    past_the_loader(monkeypatch, gem, {"id": "aux.bin", "url": "https://x.invalid/r", "sha256": DATA_SHA})
    b = opened(gem, resources={"aux.bin": DATA})
    err = b.call("py_path", {"id": "aux.bin"}).error
    assert err is not None and err.code == "E_MANIFEST" and "Windows device name" in err.message
    assert err.details["field"] == "/resources/0/id"
    assert not any(p.name == "aux.bin" for p in (tmp_path / "state").rglob("*"))


def test_SEC2_the_shipped_schemas_pattern_is_the_one_rule() -> None:
    """The manifest schemas carry SAFE_NAME as a pattern (for editors too): the same text."""
    from workbench.gem.names import SAFE_NAME_PATTERN

    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            pattern = node.get("properties", {}).get("id", {}).get("pattern")
            if pattern is not None:
                found.append(pattern)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for path in sorted(SCHEMAS.glob("*/manifest.schema.json")):
        walk(json.loads(path.read_text("utf-8")))
    assert len(found) == 3 and set(found) == {SAFE_NAME_PATTERN}


@pytest.mark.parametrize("name", ["con", "aux", "nul", "prn", "com1", "lpt9"])
@pytest.mark.parametrize("platform", ["notochord", "agent", "ekanos"])
def test_SEC2_new_refuses_a_windows_device_name(
    name: str, platform: str, tmp_path: Path, capsys: Any
) -> None:
    lang = "js" if platform == "ekanos" else "py"
    assert cli_main(["new", name, "--platform", platform, "--lang", lang, "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"gem name {name!r} is a Windows device name" in err, err
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.deno
@pytest.mark.parametrize("slug", ["con", "lpt1"])
def test_SEC2_an_ekanos_slug_windows_reserves_is_E_MANIFEST_at_slug(tmp_path: Path, slug: str) -> None:
    from test_ekanos import integration, tool

    root = integration(tmp_path / "bad", tool("x", "return {};"), slug=slug)
    with pytest.raises(workbench.GemLoadError) as err:
        workbench.open(root)
    assert err.value.details["pointer"].startswith("slug"), err.value
    assert "Windows device name" in err.value.message


# A slug (gem-workbench new, an Ekanos slug): every device in the Python table, names that only
# look like one, and the syntax's edges (the real end of the string: "con\n" is no slug either).
SLUGS_REFUSED = sorted(DEVICES) + ["Con", "con.txt", "con-", "con\n", "-a", "1a", "a_b", "", "a" * 64]
SLUGS_FINE = ["console", "com10", "com0", "lpt", "auxiliary", "con-x", "nul1", "a", "a-b", "a" * 63]


def loader_slug_problems(slug: str) -> list[tuple[str, str]]:
    from workbench.platforms.ekanos.loader import check_description

    return [p for p in check_description(Path("integration.ts"), {"slug": slug}) if p[0] == "slug"]


@pytest.mark.parametrize("slug", SLUGS_REFUSED + SLUGS_FINE)
def test_SEC2_new_and_the_ekanos_loader_take_the_same_names(slug: str, tmp_path: Path, capsys: Any) -> None:
    """One rule (gem.names.slug_problem): what `new` refuses, an Ekanos loader refuses, and why."""
    why = slug_problem(slug)
    assert (why is None) == (slug in SLUGS_FINE)
    assert loader_slug_problems(slug) == ([] if why is None else [("slug", why)])
    code = cli_main(["new", "--platform", "ekanos", "--lang", "js", "--dir", str(tmp_path), "--", slug])
    assert code == (0 if why is None else 2)
    if why is not None:
        assert f"gem name {why}" in capsys.readouterr().err and list(tmp_path.iterdir()) == []


@pytest.mark.deno
def test_SEC2_defineIntegration_refuses_the_slugs_the_workbench_refuses(tmp_path: Path) -> None:
    """The served SDK's defineIntegration, run over the Python table's cases: it refuses exactly
    the slugs slug_problem does (it took `con` before), a device name as one at `slug`."""
    from test_ekanos_sdk import PROBE, deno_json

    assert all(SLUG.fullmatch(d) for d in DEVICES)  # so each is a case the TS check must refuse itself
    slugs = SLUGS_REFUSED + SLUGS_FINE
    got = deno_json(
        tmp_path,
        PROBE + f"console.log(JSON.stringify({json.dumps(slugs)}.map((slug) => probe(good({{ slug }})))));",
    )
    assert isinstance(got, list) and len(got) == len(slugs)
    for slug, row in zip(slugs, got):
        assert (row is None) == (slug_problem(slug) is None), (slug, row)
        if row is not None:
            assert [i["path"] for i in row["issues"]] == ["slug"], (slug, row)
        if slug in DEVICES:
            assert "Windows device name" in row["message"], row
