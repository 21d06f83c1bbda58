"""gpucompiler.discovery finds the entry points importlib.metadata.entry_points(group=...) finds, in its order.

Every case builds site directories of its own (importlib.metadata caches a directory's listing by its
path and modification time), puts them alone on ``sys.path`` and compares both reads: each entry
point's name, value, group and ``name==version`` of its distribution. Where importlib.metadata
raises for every group, discovery reads on: past a malformed line of another group; leaving out,
with a RuntimeWarning naming the file, a plugin distribution it cannot read.
"""

from __future__ import annotations

import importlib.metadata
import os
import random
import sys
import zipfile
from pathlib import Path

import pytest

from gpucompiler import discovery
from gpucompiler.errors import ConfigError

GROUP = "gpucompiler.plugins"


def dist(where: Path, dirname: str, entry_points: str | None = None, metadata: str | None = None,
         pkg_info: str | None = None) -> Path:
    """A metadata directory ``where/dirname`` with the given files (METADATA from the name by default)."""
    info = where / dirname
    info.mkdir(parents=True)
    if metadata is None and pkg_info is None:
        name, _, rest = dirname.partition("-")
        metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {rest.rpartition('.')[0] or '0'}\n"
    if metadata is not None:
        (info / "METADATA").write_bytes(metadata.encode())
    if pkg_info is not None:
        (info / "PKG-INFO").write_bytes(pkg_info.encode())
    if entry_points is not None:
        (info / "entry_points.txt").write_bytes(entry_points.encode())
    return info


def reference(group: str = GROUP) -> list[tuple[str, str, str, str | None]]:
    out = []
    for ep in importlib.metadata.entry_points(group=group):
        d = ep.dist
        out.append((ep.name, ep.value, ep.group, None if d is None else f"{d.name}=={d.version}"))
    return out


def ours(group: str = GROUP) -> list[tuple[str, str, str, str | None]]:
    return [(ep.name, ep.value, ep.group, ep.dist) for ep in discovery.scan(group).entry_points]


#: the standard library's directories (importlib.metadata imports parts of it when first asked; no distributions)
STDLIB = [d for d in (os.path.dirname(os.__file__), os.path.join(os.path.dirname(os.__file__), "lib-dynload"))
          if os.path.isdir(d) and not any(n.endswith((".dist-info", ".egg-info")) for n in os.listdir(d))]


@pytest.fixture
def on_path(monkeypatch):
    """Puts the given directories on ``sys.path``, then the standard library's (no other distributions)."""
    def put(*dirs: Path | str) -> None:
        monkeypatch.setattr(sys, "path", [*(str(d) for d in dirs), *STDLIB])
    return put


def _plain(tmp: Path) -> list[Path]:
    site = tmp / "site"
    dist(site, "alpha-1.0.dist-info", f"[console_scripts]\nalpha = alpha.cli:main\n\n[{GROUP}]\na = alpha.plugin:A\n")
    dist(site, "beta-2.0.dist-info", f"[{GROUP}]\nb = beta:B\nb2=beta.sub:Two.Inner\n")
    dist(site, "gamma-3.0.dist-info", "[pytest11]\ngamma = gamma.testing\n")
    dist(site, "delta-4.0.dist-info")
    return [site]


def _duplicates_across_dirs(tmp: Path) -> list[Path]:
    first, second = tmp / "first", tmp / "second"
    dist(first, "Foo_Bar-1.0.dist-info", f"[{GROUP}]\nfoo = foo.one:P\n")
    dist(second, "foo.bar-2.0.dist-info", f"[{GROUP}]\nfoo = foo.two:P\nonly_second = foo.two:Q\n")
    dist(second, "other-1.0.dist-info", f"[{GROUP}]\nfoo = other:P\n")  # the same entry point name
    return [first, second]


def _duplicates_in_one_dir(tmp: Path) -> list[Path]:
    site = tmp / "site"
    dist(site, "pkg-1.0.dist-info", f"[{GROUP}]\np = pkg.one:P\n")
    dist(site, "PKG-2.0.dist-info", f"[{GROUP}]\np = pkg.two:P\n")
    dist(site, "Pkg-3.0.egg-info", f"[{GROUP}]\np = pkg.three:P\n")
    dist(site, "zzz-1.0.dist-info", f"[{GROUP}]\nz = zzz:P\n")
    return [site]


def _egg_info(tmp: Path) -> list[Path]:
    project, site = tmp / "project", tmp / "site"
    dist(project, "my_project.egg-info", f"[{GROUP}]\nmine = my_project.plugin:P\n",
         pkg_info="Metadata-Version: 1.2\nName: my-project\nVersion: 0.1.dev0\n")
    site.mkdir()
    (site / "old_dist-1.0-py3.11.egg-info").write_text("Metadata-Version: 1.0\nName: old_dist\nVersion: 1.0\n")
    return [site, project]


def _odd_names(tmp: Path) -> list[Path]:
    site = tmp / "site"
    dist(site, "Shouty-1.0.DIST-INFO", f"[{GROUP}]\nshouty = shouty:P\n",
         metadata="Metadata-Version: 2.1\nName: Shouty\nVersion: 1.0\n")
    dist(site, "normal-1.0.dist-info", f"[{GROUP}]\nnormal = normal:P\n")
    return [site]


def _leading_dots(tmp: Path) -> list[Path]:
    site = tmp / "site"
    dist(site, "..dist-info", f"[{GROUP}]\ndots = dots:P\n", metadata="Name: dots\nVersion: 1\n")
    dist(site, "-1.0.dist-info", f"[{GROUP}]\ndash = dash:P\n", metadata="Name: dash\nVersion: 1\n")
    return [site]


def _symlinked(tmp: Path) -> list[Path]:
    store, site = tmp / "store", tmp / "site"
    target = dist(store, "linked-1.0.dist-info", f"[{GROUP}]\nlinked = linked:P\n")
    site.mkdir()
    (site / "linked-1.0.dist-info").symlink_to(target, target_is_directory=True)
    dist(site, "dangling-1.0.dist-info").rename(tmp / "gone")
    (site / "dangling-1.0.dist-info").symlink_to(tmp / "nowhere")
    return [site]


def _file_shapes(tmp: Path) -> list[Path]:
    site = tmp / "site"
    info = dist(site, "dir_points-1.0.dist-info")
    (info / "entry_points.txt").mkdir()
    info = dist(site, "dangling_points-1.0.dist-info")
    (info / "entry_points.txt").symlink_to(tmp / "nowhere")
    dist(site, "empty_points-1.0.dist-info", "")
    dist(site, "ok-1.0.dist-info", f"[{GROUP}]\nok = ok:P\n")
    return [site]


def _sections(tmp: Path) -> list[Path]:
    site = tmp / "site"
    dist(site, "spaced-1.0.dist-info", f"\ufeff[{GROUP}]\nbom = nope:P\n[ {GROUP} ]\nspaced = nope:P\n"
         f"[[{GROUP}]]\ndoubled = yes:P\n[{GROUP}]\r\n  crlf=yes.crlf:P  \r\n# a comment\n; semicolon = yes:P\n"
         f"extras = yes.ex:P [fast, small]\n  equals = a:b=c\n[{GROUP}.other]\nnot = ours:P\n[]\nempty = x:P\n")
    dist(site, "utf8-1.0.dist-info", f"[console_scripts]\nnaïve = naïve:main\n[{GROUP}]\nünï = ünï.plug:P\n")
    dist(site, "latin1-1.0.dist-info", "[console_scripts]\nx = caf\xe9:main\n".encode("latin-1").decode("latin-1"))
    return [site]


#: METADATA heads discovery reads itself (a name of its own for each)
HEADS_READ = {
    "lower": "metadata-version: 2.1\nname: Lower.Case\nversion: 1.0 \n",
    "folded_summary": "Metadata-Version: 2.1\nName: folded_summary\nVersion: 2.0\nSummary: a\n  b\n",
    "folded_after": "Metadata-Version: 2.1\nName: folded_after\nVersion: 2.0\nSummary: a\n  b\n\tc\n",
    "twice": "Name: twice\nName: second\nVersion: 1\nVersion: 2\n",
    "late_version": "Name: late_version\nSummary: x\nAuthor: someone\nVersion: 9\n\nVersion: 10\n",
    "no_newline": "Name: no_newline\nVersion: 5",
    "colon_value": "Name: colon_value\nVersion: 1:2\n",
    "non_ascii_after": "Name: non_ascii_after\nVersion: 1.0\nAuthor: Zoë\n",
}
#: METADATA heads read through importlib.metadata (folded, encoded, CR, tab, a head ending before both)
HEADS_ASKED = {
    "folded_name": "Metadata-Version: 2.1\nName: folded\n  _name\nVersion: 2.0\n",
    "folded_version": "Name: folded_version\nVersion: 2.0\n  rc1\n",
    "crlf": "Metadata-Version: 2.1\r\nName: crlf\r\nVersion: 3.0\r\n\r\nbody\r\n",
    "unicode": "Metadata-Version: 2.1\nName: ünïcode\nVersion: 1.0\n",
    "tab": "Name:\tlate_tab\nVersion:\t1.0\t\n",
    "body_version": "Name: body_version\n\nVersion: 1\n",
    "begins_folded": "  Name: x\nName: begins_folded\nVersion: 1\n",
    "from_line": "From someone\nName: from_line\nVersion: 1\n",
    "odd_field": "Name: odd_field\nSome Field: x\nVersion: 1\n",
    "vertical_tab": "Summary: a\x0bName: vt\nName: vertical_tab\nVersion: 1\n",
}


def _metadata_heads(tmp: Path, heads: dict[str, str] = HEADS_READ | HEADS_ASKED) -> list[Path]:
    site = tmp / "site"
    for k, (name, head) in enumerate(heads.items()):
        dist(site, f"{name}-1.0.dist-info", f"[{GROUP}]\np{k} = {name}:P\n", metadata=head)
    if heads is not HEADS_ASKED:
        dist(site, "pkg_only-1.0.dist-info", f"[{GROUP}]\npkg_only = pkg_only:P\n",
             pkg_info="Metadata-Version: 1.1\nName: pkg-only\nVersion: 0.5\n")
        dist(site, "empty_metadata-1.0.dist-info", f"[{GROUP}]\nempty_metadata = e:P\n", metadata="",
             pkg_info="Name: empty-metadata\nVersion: 0.6\n")
    return [site]


def _metadata_missing(tmp: Path) -> list[Path]:
    site = tmp / "site"
    (dist(site, "bare-1.0.dist-info", f"[{GROUP}]\nbare = bare:P\n") / "METADATA").unlink()  # None==None
    return [site]


def _missing_and_relative(tmp: Path) -> list[Path | str]:
    site = tmp / "site"
    dist(site, "here-1.0.dist-info", f"[{GROUP}]\nhere = here:P\n")
    return [tmp / "does_not_exist", site, site, str(site) + os.sep]


CASES = {f.__name__.lstrip("_"): f for f in (_plain, _duplicates_across_dirs, _duplicates_in_one_dir, _egg_info,
                                            _odd_names, _leading_dots, _symlinked, _file_shapes, _sections,
                                            _metadata_heads, _metadata_missing, _missing_and_relative)}


@pytest.mark.parametrize("case", CASES)
def test_the_entry_points_are_importlib_metadatas(case, tmp_path, on_path):
    on_path(*CASES[case](tmp_path))
    expected = reference()
    assert ours() == expected
    assert expected or case in ("file_shapes",)  # the case is not vacuous


def test_the_usual_metadata_heads_are_read_without_importlib_metadata(tmp_path, on_path, monkeypatch):
    on_path(*_metadata_heads(tmp_path / "read", HEADS_READ), *_metadata_heads(tmp_path / "asked", HEADS_ASKED))
    expected = reference()
    asked = []
    real = importlib.metadata.Distribution.at
    monkeypatch.setattr(importlib.metadata.Distribution, "at", lambda path: asked.append(path) or real(path))
    assert ours() == expected
    assert sorted(os.path.basename(p).partition("-")[0] for p in asked) == sorted(HEADS_ASKED)


def test_an_egg_directory_on_the_path_is_read_through_importlib_metadata(tmp_path, on_path):
    egg = tmp_path / "eggy-1.0-py3.11.egg"
    dist(egg, "EGG-INFO", f"[{GROUP}]\neggy = eggy:P\n", pkg_info="Metadata-Version: 1.1\nName: eggy\nVersion: 1.0\n")
    on_path(egg)
    assert discovery.scan(GROUP).rows is None  # not stamped: no memo of it
    assert ours() == reference()


def test_a_zip_and_another_finder_of_distributions_are_read_through_importlib_metadata(tmp_path, on_path,
                                                                                         monkeypatch):
    site = _plain(tmp_path)[0]
    zipped = tmp_path / "dists.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped\nVersion: 1.0\n")
        z.writestr("zipped-1.0.dist-info/entry_points.txt", f"[{GROUP}]\nzipped = zipped:P\n")
    on_path(site, zipped)
    assert ("zipped", "zipped:P", GROUP, "zipped==1.0") in ours() and ours() == reference()
    assert discovery.scan(GROUP).rows is None

    elsewhere = tmp_path / "elsewhere"
    dist(elsewhere, "hidden-1.0.dist-info", f"[{GROUP}]\nhidden = hidden:P\n")

    class Finder:
        @staticmethod
        def find_spec(*args, **kwargs):
            return None

        @staticmethod
        def find_distributions(context=None):
            return iter([importlib.metadata.Distribution.at(elsewhere / "hidden-1.0.dist-info")])

    on_path(site)
    monkeypatch.setattr(sys, "meta_path", [Finder, *sys.meta_path])
    assert ("hidden", "hidden:P", GROUP, "hidden==1.0") in ours() and ours() == reference()


def test_a_malformed_line_of_another_group_breaks_importlib_metadata_not_discovery(tmp_path, on_path):
    site = _plain(tmp_path)[0]
    dist(site, "broken-1.0.dist-info", "[console_scripts]\nthis line has no equals sign\n")
    on_path(site)
    with pytest.raises(TypeError):
        reference()
    got = ours()
    (site / "broken-1.0.dist-info" / "entry_points.txt").unlink()
    on_path(tmp_path / "another")  # importlib.metadata caches the listing by the directory's path and time
    on_path(site)
    assert got == reference() and len(got) == 3


def _broken(info: Path, what: str) -> None:
    """Breaks the plugin distribution ``info`` as ``what`` says."""
    if what == "a line without '='":
        (info / "entry_points.txt").write_text(f"[{GROUP}]\nbad = bad:P\nno equals sign here\n")
    elif what == "entry points not UTF-8":
        (info / "entry_points.txt").write_bytes(f"[{GROUP}]\nbad = caf".encode() + b"\xe9:P\n")
    elif what == "a link loop":
        (info / "entry_points.txt").unlink()
        (info / "entry_points.txt").symlink_to(info / "entry_points.txt")
    else:
        (info / "METADATA").write_bytes(b"Metadata-Version: 2.1\nName: bad\nVersion: 1.0\nAuthor: Zo\xeb\n")


BROKEN = {"a line without '='": (TypeError, r"entry_points\.txt:3: 'no equals sign here' in section"),
          "entry points not UTF-8": (UnicodeDecodeError, r"entry_points\.txt is not UTF-8"),
          "a link loop": (OSError, r"entry_points\.txt cannot be read"),
          "METADATA not UTF-8": (UnicodeDecodeError, r"METADATA is not UTF-8")}


@pytest.mark.parametrize("what", BROKEN)
def test_a_broken_plugin_distribution_is_left_out_with_a_warning_naming_the_file(tmp_path, on_path, what):
    """Where importlib.metadata raises for every group (or for the distribution's name), that distribution's
    plugins are left out, as a plugin that fails to load is; the others are listed, and nothing is memoised."""
    site = tmp_path / "site"
    _broken(dist(site, "bad-1.0.dist-info", f"[{GROUP}]\nbad = bad:P\n"), what)
    dist(site, "good-1.0.dist-info", f"[{GROUP}]\ngood = good:P\n")
    on_path(site)
    error, message = BROKEN[what]
    with pytest.raises(error):
        reference()
    with pytest.warns(RuntimeWarning, match=message + ".*its entry points are left out"):
        found = discovery.scan(GROUP)
    assert [(ep.name, ep.dist) for ep in found.entry_points] == [("good", "good==1.0")] and found.rows is None


def test_what_importlib_metadata_cannot_list_is_a_config_error(tmp_path, on_path):
    site = tmp_path / "site"
    dist(site, "bad-1.0.dist-info", "[console_scripts]\nno equals sign here\n")
    zipped = tmp_path / "dists.zip"  # read through importlib.metadata
    zipfile.ZipFile(zipped, "w").close()
    on_path(site, zipped)
    with pytest.raises(ConfigError, match=r"importlib\.metadata cannot list the installed entry points \(TypeError"):
        ours()


def test_an_undecodable_file_without_the_group_is_skipped_as_it_names_no_plugin(tmp_path, on_path):
    info = dist(tmp_path / "site", "latin-1.0.dist-info")
    (info / "entry_points.txt").write_bytes(b"[console_scripts]\ncaf\xe9 = cafe:main\n")
    dist(tmp_path / "site", "fine-1.0.dist-info", f"[{GROUP}]\nfine = fine:P\n")
    on_path(tmp_path / "site")
    with pytest.raises(UnicodeDecodeError):
        reference()
    assert ours() == [("fine", "fine:P", GROUP, "fine==1.0")]


def test_an_entry_point_value_gives_the_module_and_attribute_importlib_metadata_gives():
    for value in ("mod", "mod:attr", "a.b.c:D.e", "mod : attr", "mod:attr [extra1, extra2]", "mod [x]", "ünï:P"):
        ref = importlib.metadata.EntryPoint(name="n", value=value, group=GROUP)
        assert discovery.EntryPoint("n", value, GROUP, None).reference == (ref.module, ref.attr or None), value
    for value in ("", "mod:", ":attr", "mod:attr:more", "a b", "mod:attr extra"):
        with pytest.raises(ConfigError, match="not 'module' or 'module:attribute'"):
            _ = discovery.EntryPoint("n", value, GROUP, None).reference


# -- a random site: names that collide by case and separators, several directories, files of every shape ------
NAMES = ("alpha", "Alpha", "al.pha", "al_pha", "AL-PHA", "beta", "beta__x", "Beta.X", "gamma")
LINES = (f"[{GROUP}]", "[console_scripts]", "[pytest11]", f"[{GROUP}.extra]", "# comment", "", "   ",
         "p{k} = m{k}:P", "p{k}=m{k}.sub:P.Q", "  p{k}  =  m{k}  ", "dup = first{k}:P", "dup = second{k}:P",
         "e{k} = m{k}:P [x]")
HEADS = ("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nbody\n",
         "name: {name}\nversion: {version}\n",
         "Metadata-Version: 2.1\r\nName: {name}\r\nVersion: {version}\r\n",
         "Metadata-Version: 2.1\nSummary: s\n  folded\nName: {name}\nVersion: {version}\n",
         "Name: {name}\n  continued\nVersion: {version}\n")


def random_site(tmp: Path, seed: int) -> list[Path]:
    rng = random.Random(seed)
    dirs = [tmp / f"dir{d}" for d in range(rng.randint(1, 3))]
    for d in dirs:
        d.mkdir()
        for k in range(rng.randint(0, 6)):
            name = rng.choice(NAMES)
            suffix = rng.choice((".dist-info",) * 30 + (".egg-info",) * 5 + (".DIST-INFO",))
            dirname = f"{name}-{k}.{seed}{suffix}"
            if (d / dirname).exists():
                continue
            lines = [f"[{GROUP}]"] * (rng.random() < 0.5)
            lines += [rng.choice(LINES).format(k=f"{k}_{seed}") for _ in range(rng.randint(0, 8))]
            newline = rng.choice(("\n", "\r\n"))
            points = newline.join(lines) if rng.random() < 0.8 else None
            head = rng.choice(HEADS).format(name=name, version=f"{k}.{seed}")
            if rng.random() < 0.2:
                dist(d, dirname, points, metadata="", pkg_info=head)
            else:
                dist(d, dirname, points, metadata=head)
    return dirs


@pytest.mark.parametrize("seed", range(60))
def test_random_sites_agree_with_importlib_metadata(seed, tmp_path, on_path):
    dirs = random_site(tmp_path, seed)
    on_path(*dirs)
    assert ours() == reference()
