"""The documentation site builds strictly, and its examples run and print what they show.

* Every ``python`` block of a page is executed, and every ``pycon`` block
  (``>>>`` prompts with their output) is run as a doctest, in page order and in
  one namespace per page. A block right after the line ``<!-- slow -->`` runs
  only in the slow suite (later blocks must not depend on it).
* Every ``$ freeprob ...`` line of a ``bash`` block runs through the real
  command line, and each line shown under it must be a line of its output
  (as tests/test_readme.py does for the README).
* ``mkdocs build --strict`` (broken links, unknown pages, missing anchors, a
  docstring mkdocstrings cannot read: all fail it) runs in the fast suite
  executing the quick gallery notebooks, and in the slow suite executing every
  notebook (a cell that raises fails the build). A notebook is slow when its
  metadata says ``"freeprob": {"slow": true}``.
"""

import doctest
import importlib.util
import io
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)
FENCE = re.compile(r"^(<!-- slow -->\n)?```(python|pycon|bash)\n(.*?)^```", flags=re.S | re.M)
DOCTEST_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def page_id(page):
    return page.relative_to(DOCS).as_posix()


def blocks(page):
    """``[(language, code, slow)]`` of the executable fenced blocks of a page, in order."""
    return [(lang, code, bool(slow)) for slow, lang, code in FENCE.findall(page.read_text())]


def run_examples(page, slow):
    """Run the page's Python examples; ``slow`` False skips the blocks marked slow."""
    namespace = {"__name__": f"docs.{page.stem}"}
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=DOCTEST_FLAGS)
    ran = 0
    for number, (lang, code, is_slow) in enumerate(blocks(page), 1):
        if is_slow and not slow:
            continue
        where = f"{page_id(page)}, block {number}"
        if lang == "python":
            exec(compile(code, where, "exec"), namespace)
            ran += 1
        elif lang == "pycon":
            test = parser.get_doctest(code, namespace, where, str(page), 0)
            out = io.StringIO()
            result = runner.run(test, out=out.write, clear_globs=False)
            assert result.failed == 0, out.getvalue()
            namespace = test.globs  # DocTest runs in a copy of the namespace: carry its names to the next block
            ran += 1
    return ran


def pages_with(kind):
    found = []
    for page in PAGES:
        langs = [(lang, slow) for lang, _, slow in blocks(page)]
        if kind == "fast" and any(lang != "bash" and not slow for lang, slow in langs):
            found.append(page)
        if kind == "slow" and any(lang != "bash" and slow for lang, slow in langs):
            found.append(page)
    return found


@pytest.mark.parametrize("page", pages_with("fast"), ids=page_id)
def test_python_examples(page):
    assert run_examples(page, slow=False) > 0


@pytest.mark.slow
@pytest.mark.parametrize("page", pages_with("slow"), ids=page_id)
def test_python_examples_slow(page):
    assert run_examples(page, slow=True) > 0


def transcripts(page):
    """``(argv, expected lines)`` of every ``$ freeprob ...`` line of the page's bash blocks (comments after # cut)."""
    out = []
    for lang, code, slow in blocks(page):
        if lang != "bash":
            continue
        current = None
        for line in code.splitlines():
            if line.startswith("$ freeprob "):
                current = (shlex.split(line[len("$ freeprob "):].split("  #")[0]), [], slow)
                out.append(current)
            elif line.startswith("$ "):
                raise AssertionError(f"{page_id(page)}: only freeprob transcripts are run, got {line!r}")
            elif current is not None and line.strip():
                current[1].append(line.split("  #")[0].strip())
    return out


@pytest.mark.parametrize("page", [p for p in PAGES if transcripts(p)], ids=page_id)
def test_shell_transcripts_print_what_they_show(page):
    from freeprob.cli import main

    for argv, expected, slow in transcripts(page):
        if slow:
            continue
        out = io.StringIO()
        assert main(argv, out=out) == 0, argv
        lines = [line.strip() for line in out.getvalue().splitlines()]
        for line in expected:
            assert line in lines, (page_id(page), argv, line, lines)


def test_pages_have_examples():
    """The pages written for the site carry executed examples; the extraction finds them."""
    for name in ("index.md", "conventions.md", "cli.md", "attention.md"):
        page = DOCS / name
        assert any(lang in ("python", "pycon") for lang, _, _ in blocks(page)) or transcripts(page), name


# --------------------------------------------------------------------------
# The command-line reference is generated from the real parser
# --------------------------------------------------------------------------


def load_hooks():
    spec = importlib.util.spec_from_file_location("freeprob_docs_hooks", DOCS / "hooks" / "freeprob_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_has_every_command_and_option():
    import argparse

    from freeprob.cli import build_parser

    hooks = load_hooks()
    parser = build_parser()
    text = hooks.cli_reference(parser)
    commands = hooks._commands(parser)
    assert {" ".join(words) for words, _, _ in commands} >= {
        "freeprob law", "freeprob density", "freeprob check", "freeprob attention sweep", "freeprob equivalence"}
    for words, _, sub in commands[1:]:
        assert f"### `{' '.join(words)}`" in text
        for action in sub._actions:
            if action.option_strings and not isinstance(action, argparse._HelpAction):
                assert f"`{', '.join(action.option_strings)}" in text, (words, action.option_strings)
    assert hooks.MARKER in (DOCS / "cli.md").read_text()


# --------------------------------------------------------------------------
# Notebooks: stored without outputs, executed by the slow build
# --------------------------------------------------------------------------

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(notebook):
    """Outputs are made by executing the notebook (the slow docs build), never stored where they can go stale."""
    nb = json.loads(notebook.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, (notebook.name, cell["source"][:1])


def test_gallery_lists_every_notebook():
    nav = (ROOT / "mkdocs.yml").read_text()
    for notebook in NOTEBOOKS:
        assert f"gallery/{notebook.name}" in nav, notebook.name


# --------------------------------------------------------------------------
# The site
# --------------------------------------------------------------------------


def build_site(site, execute):
    """``mkdocs build --strict`` into ``site`` with ``FREEPROB_DOCS_EXECUTE=execute``; returns (seconds, log)."""
    if importlib.util.find_spec("mkdocs") is None:
        pytest.fail("mkdocs is not installed: pip install -e '.[test]' (or '.[docs]') installs the site's tools")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "FREEPROB_DOCS_EXECUTE": execute}
    start = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=3000)
    seconds = time.perf_counter() - start
    assert res.returncode == 0, res.stderr[-5000:]
    return seconds, res.stderr


def executed_page(site, notebook):
    """Whether the notebook's page shows cell outputs (an output element, not the style sheet's class name)."""
    page = (site / "gallery" / notebook.stem / "index.html").read_text()
    return re.search(r'<div class="[^"]*\bjp-OutputArea-output\b', page) is not None


def test_site_builds_strictly(tmp_path):
    seconds, log = build_site(tmp_path / "site", execute="quick")
    print(f"mkdocs build --strict (quick notebooks executed): {seconds:.1f} s")
    cli = (tmp_path / "site" / "cli" / "index.html").read_text()
    assert 'id="freeprob-attention-sweep"' in cli and "--scheduler" in cli
    api = (tmp_path / "site" / "api" / "laws" / "index.html").read_text()
    assert "density_fast" in api and ":meth:" not in api
    hooks = load_hooks()
    quick = [nb for nb in NOTEBOOKS if not hooks.slow_notebook(nb)]
    assert quick, "the fast suite executes at least one gallery notebook"
    for notebook in NOTEBOOKS:
        slow = hooks.slow_notebook(notebook)
        assert f"execute={not slow}): {notebook}" in log, notebook.name
        assert executed_page(tmp_path / "site", notebook) == (not slow), notebook.name


@pytest.mark.slow
def test_site_builds_with_executed_notebooks(tmp_path):
    seconds, log = build_site(tmp_path / "site", execute="true")
    print(f"mkdocs build --strict with every notebook executed: {seconds:.1f} s")
    for notebook in NOTEBOOKS:
        assert f"execute=True): {notebook}" in log, notebook.name
        assert executed_page(tmp_path / "site", notebook), notebook.name


def test_api_reference_covers_the_public_names():
    """Every name of ``freeprob.__all__`` and ``freeprob.attention.__all__`` has its entry in docs/api/."""
    import freeprob
    from freeprob import attention

    text = "\n".join(p.read_text() for p in sorted((DOCS / "api").glob("*.md")))
    documented = set(re.findall(r"^::: (freeprob[\w.]*)", text, flags=re.M))
    names = set(attention.__all__) | set(freeprob.__all__) - {"attention"}
    missing = sorted(n for n in names if f"freeprob.{n}" not in documented and f"freeprob.attention.{n}" not in documented)
    assert not missing, f"add to a page of docs/api/: {missing}"
