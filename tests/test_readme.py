"""The README's Python examples run, and the values they quote are the ones computed."""

import pathlib
import re

import freeprob as fp

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_python_blocks_run():
    found = blocks()
    assert found
    for code in found:
        exec(compile(code, "README.md", "exec"), {})


def test_quoted_values():
    p, n = fp.dims("p n")
    X = fp.gaussian("X", (p, n))
    law = fp.eigenvalue_law(X @ X.T / n, ratios={p: 0.5, n: 1})
    text = README.read_text()
    quoted = re.search(r"law.density\(1.0, dps=50\)\s+# (0\.[0-9]+)", text).group(1)
    assert fp.fmt(law.density(1.0, dps=50), 50).startswith(quoted)
    assert "[1, 3/2, 11/4, 45/8]" in text and [str(m) for m in law.moments(4)] == ["1", "3/2", "11/4", "45/8"]


def transcripts():
    """``(command, expected lines)`` of every ``$ freeprob ...`` transcript in the README (comments after # cut)."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S):
        current = None
        for line in block.splitlines():
            if line.startswith("$ freeprob "):
                current = (line[len("$ freeprob "):].split(), [])
                out.append(current)
            elif current is not None and line.strip():
                current[1].append(line.split("  #")[0].strip())
    return out


def test_shell_transcripts_print_what_they_show():
    """Each transcript's command runs, and every line it shows is a line of the real output."""
    import io

    from freeprob.cli import main

    found = transcripts()
    assert found
    for argv, expected in found:
        out = io.StringIO()
        assert main(argv, out=out) == 0, argv
        lines = [line.strip() for line in out.getvalue().splitlines()]
        for line in expected:
            assert line in lines, (argv, line)
