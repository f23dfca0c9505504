"""MkDocs hooks of the documentation site (mkdocs.yml, ``hooks:``).

* The command-line reference is generated from the real parser,
  ``freeprob.cli.build_parser()``, where ``cli.md`` carries the marker
  ``<!-- cli-reference -->``: the page cannot drift from the program.
* The notebooks of ``notebooks/`` are pages of the gallery
  (``gallery/NAME.ipynb``) without being copied into ``docs/``; the
  mkdocs-jupyter plugin renders them. ``FREEPROB_DOCS_EXECUTE`` chooses
  which are executed during the build: ``false`` (the default: none, so
  ``mkdocs serve`` stays fast), ``quick`` (all but those whose metadata says
  ``"freeprob": {"slow": true}``; the fast test suite) or ``true`` (all; the
  slow test suite). A cell that raises fails the build.
* Docstrings use Sphinx-style roles (``:func:`name```); in the rendered API
  reference the role prefix is dropped, leaving the code name (``~a.b.C``
  reads ``C``, as in Sphinx).

The generator is also importable (``cli_reference(parser)``), which is how
tests/test_docs.py checks it without building the site.
"""

import argparse
import json
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
MARKER = "<!-- cli-reference -->"
USAGE_WIDTH = 76

# Used only for options whose parser gives no help string; the parser's own help always wins.
FALLBACK_HELP = {
    "--json": "print the result as JSON on standard output (numbers as decimal strings)",
    "--latex": "print the equations as LaTeX",
    "--dps": "verified decimal digits of the reported numbers",
    "--csv": "write the density grid to this CSV file",
    "--plot": "write a picture here (its suffix chooses the format: .png, .pdf, .svg, ...)",
    "--grid": "points of the density grid",
    "--seed": "seed of the random generator",
    "--reps": "replicates of the sample (R at N and 2R at N/2)",
    "--n": "matrix size N of the Monte-Carlo sample",
}


# --------------------------------------------------------------------------
# The command-line reference
# --------------------------------------------------------------------------


def _subcommands(parser):
    """``[(name, help, subparser)]`` of a parser's subcommands, in the order they were added."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    out.append((name, helps.get(name), sub))
    return out


def _commands(parser, path=("freeprob",), help=None):
    """Every command of the tree, depth first: ``(words, help, parser)``."""
    found = [(path, help, parser)]
    for name, sub_help, sub in _subcommands(parser):
        found.extend(_commands(sub, path + (name,), sub_help))
    return found


def _usage(parser):
    formatter = argparse.HelpFormatter(parser.prog, width=USAGE_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _default(action):
    value = action.default
    if value is None or value is argparse.SUPPRESS or isinstance(value, bool):
        return None
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _argument_rows(parser):
    exclusive = {}
    for group in parser._mutually_exclusive_groups:
        flags = [a.option_strings[0] for a in group._group_actions if a.option_strings]
        for a in group._group_actions:
            if a.option_strings:
                exclusive[a.option_strings[0]] = [f for f in flags if f != a.option_strings[0]]
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                name += " " + (action.metavar or action.dest.upper())
        else:
            name = action.metavar or action.dest
        help_text = action.help or FALLBACK_HELP.get(action.option_strings[0] if action.option_strings else "", "")
        notes = []
        if action.choices is not None:
            notes.append("one of " + ", ".join(f"`{c}`" for c in action.choices))
        default = _default(action)
        if action.default is argparse.SUPPRESS and action.option_strings:
            notes.append("default: the value given before the subcommand")
        elif default is not None and "default" not in help_text:
            notes.append(f"default `{default}`")
        if action.required and action.option_strings:
            notes.append("required")
        if isinstance(action, argparse._AppendAction):
            notes.append("repeatable")
        if action.option_strings and action.option_strings[0] in exclusive:
            notes.append("not with " + ", ".join(f"`{f}`" for f in exclusive[action.option_strings[0]]))
        text = help_text
        if notes:
            text = (text + "; " if text else "") + "; ".join(notes)
        rows.append((f"`{name}`", _cell(text) or "—"))
    return rows


def _anchor(words):
    return "-".join(words)


def cli_reference(parser):
    """The Markdown reference of every command of ``parser`` (``freeprob.cli.build_parser()``)."""
    commands = _commands(parser)
    lines = ["| command | what it does |", "| --- | --- |"]
    for words, help_text, _ in commands[1:]:
        lines.append(f"| [`{' '.join(words)}`](#{_anchor(words)}) | {_cell(help_text or '')} |")
    lines.append("")
    for words, help_text, sub in commands[1:]:
        lines.append(f"### `{' '.join(words)}` {{#{_anchor(words)}}}")
        lines.append("")
        for text in (help_text, sub.description if sub.description != help_text else None):
            if text:
                lines.append(text[:1].upper() + text[1:] + ("" if text.endswith(".") else "."))
                lines.append("")
        lines.append("```text")
        lines.append(_usage(sub))
        lines.append("```")
        lines.append("")
        rows = _argument_rows(sub)
        if rows:
            lines.append("| argument | meaning |")
            lines.append("| --- | --- |")
            lines.extend(f"| {a} | {b} |" for a, b in rows)
            lines.append("")
        subs = _subcommands(sub)
        if subs:
            lines.append("Subcommands: " + ", ".join(f"[`{name}`](#{_anchor(words + (name,))})" for name, _, _ in subs) + ".")
            lines.append("")
    return "\n".join(lines)


def on_page_markdown(markdown, page, config, files):
    if MARKER in markdown:
        from freeprob.cli import build_parser

        markdown = markdown.replace(MARKER, cli_reference(build_parser()))
    return markdown


# --------------------------------------------------------------------------
# The gallery: notebooks/ as pages, and Sphinx roles in docstrings
# --------------------------------------------------------------------------


EXECUTE_MODES = ("false", "quick", "true")


def slow_notebook(path):
    """Whether a notebook's metadata marks it as too slow for the fast build (``"freeprob": {"slow": true}``)."""
    return bool(json.loads(Path(path).read_text()).get("metadata", {}).get("freeprob", {}).get("slow", False))


def on_config(config):
    from mkdocs.exceptions import PluginError

    mode = os.environ.get("FREEPROB_DOCS_EXECUTE", "").strip().lower() or "false"
    if mode not in EXECUTE_MODES:
        raise PluginError(f"FREEPROB_DOCS_EXECUTE must be one of {', '.join(EXECUTE_MODES)}, got {mode!r}")
    jupyter = config.plugins["mkdocs-jupyter"].config
    jupyter["execute"] = mode != "false"
    jupyter["execute_ignore"] = [str(nb) for nb in NOTEBOOKS.glob("*.ipynb") if slow_notebook(nb)] if mode == "quick" else []
    return config


def _event_priority(priority):
    from mkdocs.plugins import event_priority

    return event_priority(priority)


@_event_priority(50)  # before mkdocs-jupyter turns .ipynb files into pages
def _add_notebooks(files, config):
    from mkdocs.structure.files import File

    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        files.append(File.generated(config, f"gallery/{notebook.name}", abs_src_path=str(notebook)))
    return files


@_event_priority(-50)  # after mkdocs-jupyter wrapped them: its wrapper does not see a generated file's source path
def _notebook_sources(files, config):
    for f in files:
        inner = getattr(f, "file", None)
        if inner is not None and f.abs_src_path is None and getattr(inner, "abs_src_path", None):
            f.abs_src_path = inner.abs_src_path
    return files


def _combined(*handlers):
    from mkdocs.plugins import CombinedEvent

    return CombinedEvent(*handlers)


on_files = _combined(_add_notebooks, _notebook_sources)

_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):<code>(~?)([^<]*)</code>")


def _code_name(match):
    """``:class:`~a.b.C``` reads ``C``, as in Sphinx; without the tilde the full name stays."""
    tilde, name = match.groups()
    return f"<code>{name.rsplit('.', 1)[-1] if tilde else name}</code>"


def on_page_content(html, page, config, files):
    return _ROLE.sub(_code_name, html)
