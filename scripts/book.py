#!/usr/bin/env python3
"""Builds and checks the book in docs/ (mdBook): what scripts/test runs as its "book" step.

    scripts/book.py check            build the book, then check it: the reference, links, code blocks
                                     and running every Python and JavaScript example
    scripts/book.py cli [--write]    compare docs/src/cli-reference.md with what the binaries print
                                     now (--write: regenerate it)

`check` fails, naming the chapter and line, when
- docs/src/cli-reference.md differs from the `--help` of `cape` (every subcommand) and
  `capelab-relay` as built now (regenerate: scripts/book.py cli --write);
- a `cape …` or `capelab-relay …` command shown in README or a chapter (a code span or a shell
  block) names a subcommand or a flag its --help does not list;
- a relative link or image in README.md or the book points at a file or heading that does not exist,
  or a chapter links out of docs/src (the built HTML would break: use the repository URL);
- a code block has no language (rustdoc and mdBook would compile it as Rust), or a chapter with
  Rust examples is not among the doc-tests of crates/book (where `cargo test` runs them);
- a ```python block fails under tools/venv's Python, or a ```js / ```javascript block fails under
  Node with the npm package importable by its name.

Code blocks: ```python and ```js run each as its own script, in a scratch directory that has `data/`
(the repository's) and the built `cape` and `capelab-relay` on PATH. `ignore` after the language
(```python ignore, ```js,ignore) skips a block; `no_run` only checks its syntax. Line numbers in
a failing block's traceback are those of the chapter. Rust blocks are rustdoc doc-tests of the
crate `capelab-book` (crates/book), which includes each chapter, so they build against the
workspace's crates with the rest of `cargo test`.

Environment (defaults in brackets): CAPE_BIN [target/debug/cape], CAPELAB_RELAY_BIN
[target/debug/capelab-relay], CAPELAB_PYTHON [tools/venv/bin/python], CAPELAB_NPM_PKG [crates/js/pkg,
the npm package as crates/js/build.sh assembles it], MDBOOK [mdbook].
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SRC = DOCS / "src"
BOOK_OUT = DOCS / "book"
REFERENCE = SRC / "cli-reference.md"
BOOK_CRATE = ROOT / "crates" / "book" / "src" / "lib.rs"
# Chapters written with a crate of their own: while the crate is not in the tree, its chapter may be
# missing too, and the book is built with a page that says so. Once the crate is here, so must be
# its chapter.
CHAPTER_OF_CRATE = {"python.md": "crates/python", "javascript.md": "crates/js"}
# Where crates/js/build.sh assembles the npm package, unless CAPELAB_NPM_PKG says otherwise.
JS_PACKAGE_DIR = ROOT / "crates/js/pkg"
RUNNABLE = {"python": "python", "py": "python", "js": "js", "javascript": "js", "mjs": "js"}
BLOCK_TIMEOUT_S = 300


class Failures:
    """Every problem found, printed together at the end."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(f"{where}: {message}")

    def __bool__(self) -> bool:
        return bool(self.items)


def rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------------------
# Markdown: fenced blocks, headings, links


@dataclass
class Block:
    path: Path
    fence_line: int  # 1-based line of the opening fence
    lang: str
    attrs: set[str]
    code: str  # dedented by the fence's indentation

    @property
    def first_code_line(self) -> int:
        return self.fence_line + 1

    @property
    def where(self) -> str:
        return f"{rel(self.path)}:{self.fence_line}"


FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def split_markdown(path: Path) -> tuple[list[Block], list[tuple[int, str]]]:
    """The fenced code blocks, and the other lines (1-based number, text) outside them."""
    blocks: list[Block] = []
    prose: list[tuple[int, str]] = []
    lines = path.read_text().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):
            prose.append((i + 1, lines[i]))
            i += 1
            continue
        indent, fence = len(m["indent"]), m["fence"]
        tokens = [t for t in re.split(r"[,\s]+", m["info"].strip()) if t]
        start, body = i, []
        i += 1
        closing = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
        while i < len(lines) and not closing.match(lines[i]):
            line = lines[i]
            body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
            i += 1
        i += 1  # the closing fence (or the end of the file)
        lang = tokens[0].lower() if tokens else ""
        blocks.append(Block(path, start + 1, lang, set(tokens[1:]), "\n".join(body) + "\n"))
    return blocks, prose


def heading_ids(path: Path) -> set[str]:
    """The anchors mdBook (and GitHub, for these headings) gives a chapter's headings."""
    ids: set[str] = set()
    _, prose = split_markdown(path)
    for _, line in prose:
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        text = re.sub(r"<[^>]+>", "", m[1])
        text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text only
        text = text.replace("`", "").replace("*", "")
        slug = "".join(
            c.lower() if (c.isalnum() or c in "_-") else "-" if c.isspace() else "" for c in text
        )
        unique, n = slug, 1
        while unique in ids:
            unique, n = f"{slug}-{n}", n + 1
        ids.add(unique)
    return ids


INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)


def paragraphs(path: Path) -> list[tuple[int, str]]:
    """(first line, text) of each run of non-blank lines outside code blocks: links and code
    spans may wrap across lines."""
    _, prose = split_markdown(path)
    found: list[tuple[int, str]] = []
    start, lines, last = 0, [], -1
    for number, line in prose + [(-1, "")]:
        if line.strip() and number == last + 1:
            lines.append(line)
        else:
            if lines:
                found.append((start, "\n".join(lines)))
            start, lines = number, [line] if line.strip() else []
        last = number
    return found


def code_spans(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every inline code span, a wrapped one joined with spaces."""
    return [
        (start + text[: m.start()].count("\n"), m[0].strip("`").strip().replace("\n", " "))
        for start, text in paragraphs(path)
        for m in INLINE_CODE.finditer(text)
    ]


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every inline link, image and reference definition outside code."""
    found = []
    for start, text in paragraphs(path):
        # Blank out code spans (keeping line breaks) so that their text is not read as links.
        text = INLINE_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m[0]), text)
        for pattern in (LINK, REF_DEF):
            found += [(start + text[: m.start()].count("\n"), m[1]) for m in pattern.finditer(text)]
    return sorted(found)


def check_links(files: list[Path], pending: list[str], failures: Failures) -> int:
    """Relative links resolve to files, and #anchors to headings; returns how many were checked.
    A link to a chapter that is `pending` (see `missing_chapters`) is accepted."""
    waiting = {(SRC / chapter).resolve() for chapter in pending}
    checked = 0
    ids_cache: dict[Path, set[str]] = {}
    for path in files:
        in_book = SRC in path.parents
        for line, target in links(path):
            where = f"{rel(path)}:{line}"
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue  # https:, mailto: …: not checked (no network in the tests)
            checked += 1
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if file_part:
                lexical = Path(os.path.normpath(path.parent / file_part))
                if in_book and SRC not in lexical.parents:
                    failures.add(
                        where,
                        f"link `{target}` leaves docs/src: the built book would not have it "
                        "(link to https://github.com/capelab/capelab/blob/main/… instead)",
                    )
                    continue
                if not dest.exists() and dest not in waiting:
                    failures.add(where, f"link `{target}`: {rel(lexical)} does not exist")
                    continue
            if anchor and dest.suffix == ".md" and dest.exists():
                if dest not in ids_cache:
                    ids_cache[dest] = heading_ids(dest)
                if anchor not in ids_cache[dest]:
                    near = difflib.get_close_matches(anchor, ids_cache[dest], n=1)
                    hint = f" (did you mean #{near[0]}?)" if near else ""
                    failures.add(where, f"link `{target}`: no heading #{anchor} in {rel(dest)}{hint}")
    return checked


# ---------------------------------------------------------------------------------------------
# The book's structure


def summary_chapters() -> list[str]:
    """The chapter files SUMMARY.md links, relative to docs/src (drafts, `[x]()`, have none)."""
    _, prose = split_markdown(SRC / "SUMMARY.md")
    return [m[1] for _, line in prose for m in LINK.finditer(line) if m[1]]


def chapters_on_disk() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.md") if p.name != "SUMMARY.md" and p.is_file())


def missing_chapters(failures: Failures) -> list[str]:
    """Chapters SUMMARY.md lists that are not there: allowed only while their crate is not."""
    pending = []
    for chapter in summary_chapters():
        if (SRC / chapter).exists():
            continue
        crate = CHAPTER_OF_CRATE.get(chapter)
        if crate and not (ROOT / crate).exists():
            pending.append(chapter)
        else:
            failures.add(
                "docs/src/SUMMARY.md",
                f"lists {chapter}, which does not exist"
                + (f" ({crate} is here, so its chapter must be too)" if crate else ""),
            )
    return pending


def check_structure(failures: Failures) -> None:
    listed = set(summary_chapters())
    for path in chapters_on_disk():
        name = str(path.relative_to(SRC))
        if name not in listed:
            failures.add(rel(path), "is not linked from docs/src/SUMMARY.md, so the book leaves it out")


def doctested_chapters() -> set[Path]:
    """The chapters crates/book includes as doc-tests."""
    if not BOOK_CRATE.exists():
        return set()
    text = BOOK_CRATE.read_text()
    return {(BOOK_CRATE.parent / p).resolve() for p in re.findall(r'include_str!\("([^"]+)"\)', text)}


def check_blocks(files: list[Path], failures: Failures) -> list[Block]:
    """Every block has a language; Rust chapters are doc-tested. Returns the runnable blocks."""
    doctested = doctested_chapters()
    for path in doctested:
        if not path.exists():
            failures.add(rel(BOOK_CRATE), f"includes {rel(path)}, which does not exist")
    runnable = []
    for path in files:
        blocks, _ = split_markdown(path)
        for block in blocks:
            if not block.lang:
                failures.add(
                    block.where,
                    "a code block needs a language (```text for output, ```sh for commands): "
                    "rustdoc and mdBook compile an unlabelled block as Rust",
                )
            elif block.lang == "rust" and "ignore" not in block.attrs:
                if path == ROOT / "README.md":
                    failures.add(block.where, "README has no doc-test: put Rust examples in a chapter")
                elif path.resolve() not in doctested:
                    failures.add(
                        block.where,
                        f"a Rust example in a chapter crates/book does not include: add "
                        f'#[doc = include_str!("../../../docs/src/{path.relative_to(SRC)}")] there',
                    )
            elif block.lang in RUNNABLE and "ignore" not in block.attrs:
                runnable.append(block)
    return runnable


# ---------------------------------------------------------------------------------------------
# The command-line reference, from the binaries' --help


def binaries() -> dict[str, Path]:
    return {
        "cape": Path(os.environ.get("CAPE_BIN", ROOT / "target/debug/cape")),
        "capelab-relay": Path(os.environ.get("CAPELAB_RELAY_BIN", ROOT / "target/debug/capelab-relay")),
    }


def help_text(binary: Path, args: list[str]) -> str:
    out = subprocess.run(
        [str(binary), *args, "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "CLICOLOR": "0", "COLUMNS": "100"},
        timeout=60,
    )
    if out.returncode != 0:
        raise SystemExit(f"{binary} {' '.join(args)} --help failed: {out.stderr.strip()}")
    return out.stdout.rstrip() + "\n"


def subcommands(help_output: str) -> list[str]:
    """The names clap lists under `Commands:` (without `help`)."""
    names, inside = [], False
    for line in help_output.split("\n"):
        if line.strip() == "Commands:":
            inside = True
        elif inside and not line.strip():
            break
        elif inside and (m := re.match(r"^  (\S+)", line)):
            if m[1] != "help":
                names.append(m[1])
    return names


def help_texts() -> dict[tuple[str, ...], str]:
    """Every command's `--help`, keyed by its words: ("cape",), ("cape", "bench", "pld"), …"""
    texts: dict[tuple[str, ...], str] = {}
    for name, binary in binaries().items():
        if not binary.is_file():
            raise SystemExit(
                f"{binary} is not built: cargo build -p {'capelab-cli' if name == 'cape' else name}"
            )

        def walk(path: list[str]) -> None:
            text = help_text(binary, path)
            texts[(name, *path)] = text
            for sub in subcommands(text):
                walk([*path, sub])

        walk([])
    return texts


def reference_markdown(texts: dict[tuple[str, ...], str]) -> str:
    titles = [" ".join(words) for words in texts]
    header = (
        "# Reference (generated)\n\n"
        "<!-- Generated by `scripts/book.py cli --write` from the binaries' --help: do not edit by hand.\n"
        "     The test command fails when this file differs from what they print. -->\n\n"
        "Every command and flag of `cape` and `capelab-relay`, as their `--help` prints them in this\n"
        "build. What the commands are for: [The `cape` command line](cli.md) and\n"
        "[The relay](relay.md).\n\n"
        "Commands: "
        + ", ".join(f"[`{t}`](#{t.replace(' ', '-')})" for t in titles)
        + ".\n\n"
    )
    sections = [
        f"## `{t}`\n\n```text\n$ {t} --help\n{text}```\n" for t, text in zip(titles, texts.values())
    ]
    return header + "\n".join(sections)


def check_reference(write: bool, failures: Failures) -> dict[tuple[str, ...], str] | None:
    """Compares (or writes) the reference; returns the help texts, or None if it cannot run them."""
    try:
        texts = help_texts()
    except SystemExit as e:
        failures.add(rel(REFERENCE), f"cannot generate it: {e}")
        return None
    now = reference_markdown(texts)
    if write:
        REFERENCE.write_text(now)
        print(f"wrote {rel(REFERENCE)}")
        return texts
    was = REFERENCE.read_text() if REFERENCE.exists() else ""
    if was != now:
        diff = "".join(
            list(
                difflib.unified_diff(
                    was.splitlines(True), now.splitlines(True), rel(REFERENCE), "the binaries now", n=1
                )
            )[:60]
        )
        failures.add(
            rel(REFERENCE),
            "differs from what the binaries' --help print now; regenerate it with\n"
            "    scripts/book.py cli --write\n" + diff,
        )
    return texts


SHELL_BREAK = {"|", "||", "&", "&&", ";", ">", ">>", "2>", "<", "\\"}


def command_mentions(path: Path) -> list[tuple[int, list[str]]]:
    """(line, words) of every `cape …` / `capelab-relay …` in a code span or a shell block."""
    texts = code_spans(path)
    blocks, _ = split_markdown(path)
    for block in blocks:
        if block.lang in {"sh", "bash", "shell", "console"}:
            texts += [(block.first_code_line + i, line) for i, line in enumerate(block.code.split("\n"))]
    found = []
    for line, text in texts:
        words = text.replace("\\|", "|").split()
        for i, word in enumerate(words):
            # A command starts the span or follows a prompt, a shell operator or `VAR=value`;
            # elsewhere `cape` is a value (`--pca cape`) or a package (`-p capelab-relay`).
            starts = i == 0 or words[i - 1] in SHELL_BREAK | {"$", "time", "sudo", "exec"}
            starts = starts or re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[i - 1]) is not None
            if starts and word.rsplit("/", 1)[-1] in {"cape", "capelab-relay"}:
                rest = []
                for w in words[i + 1 :]:
                    if w in SHELL_BREAK or w.startswith(("#", ">")):
                        break
                    rest.append(w)
                found.append((line, [word.rsplit("/", 1)[-1], *rest]))
    return found


def check_commands(
    files: list[Path], texts: dict[tuple[str, ...], str], failures: Failures
) -> int:
    """Every `cape` / `capelab-relay` command the docs show names a real subcommand and real flags
    (those its --help lists). Returns how many were checked."""
    flags = {words: set(re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*", text)) for words, text in texts.items()}
    checked = 0
    for path in files:
        for line, words in command_mentions(path):
            where, shown = f"{rel(path)}:{line}", " ".join(words)
            command = (words[0],)
            rest = words[1:]
            while rest and (*command, rest[0]) in texts:
                command, rest = (*command, rest[0]), rest[1:]
            has_subcommands = any(len(k) == len(command) + 1 and k[: len(command)] == command for k in texts)
            if rest and has_subcommands and not rest[0].startswith("-"):
                if not re.search(r"[<|…*]|\.\.\.", rest[0]):
                    failures.add(where, f"`{shown}`: `{' '.join(command)}` has no subcommand `{rest[0]}`")
                continue
            checked += 1
            for word in rest:
                flag = re.match(r"--[a-z0-9][a-z0-9-]*", word)
                if flag and flag[0] not in flags[command]:
                    near = difflib.get_close_matches(flag[0], flags[command], n=1)
                    hint = f" (did you mean {near[0]}?)" if near else ""
                    failures.add(
                        where, f"`{shown}`: `{' '.join(command)}` has no flag {flag[0]}{hint}"
                    )
    return checked


# ---------------------------------------------------------------------------------------------
# Building the book


def build(pending: list[str]) -> None:
    mdbook = os.environ.get("MDBOOK", "mdbook")
    if not pending:
        subprocess.run([mdbook, "build", str(DOCS)], check=True)
        return
    # A copy of docs/ with a page for each chapter whose crate is not in this tree yet.
    with tempfile.TemporaryDirectory(prefix="capelab-book-") as tmp:
        copy = Path(tmp) / "docs"
        shutil.copytree(DOCS, copy, symlinks=True, ignore=shutil.ignore_patterns("book"))
        for chapter in pending:
            crate = CHAPTER_OF_CRATE[chapter]
            title = {"python.md": "Python API", "javascript.md": "JavaScript API (npm)"}[chapter]
            (copy / "src" / chapter).write_text(
                f"# {title}\n\nThis chapter comes with `{crate}`, which is not in this tree yet.\n"
            )
            print(f"    note: {chapter} is not here yet ({crate} is not either); built with a page saying so")
        subprocess.run([mdbook, "build", str(copy), "--dest-dir", str(BOOK_OUT)], check=True)


# ---------------------------------------------------------------------------------------------
# Running the Python and JavaScript examples


@dataclass
class Runner:
    scratch: Path
    python: str
    js_package: Path | None
    env: dict[str, str] = field(default_factory=dict)

    def run(self, block: Block) -> str | None:
        """None if the block ran (or, `no_run`, parsed); otherwise what went wrong."""
        kind = RUNNABLE[block.lang]
        # Pad with blank lines so the interpreter's line numbers are the chapter's.
        source = "\n" * (block.first_code_line - 1) + block.code
        stem = f"{block.path.stem}.md"
        if kind == "python":
            script = self.scratch / f"{stem}.py"
            command = [self.python, "-m", "py_compile", str(script)] if "no_run" in block.attrs else [
                self.python, str(script)]
        else:
            script = self.scratch / f"{stem}.mjs"
            command = ["node", "--check", str(script)] if "no_run" in block.attrs else ["node", str(script)]
        script.write_text(source)
        try:
            out = subprocess.run(
                command, cwd=self.scratch, env=self.env, capture_output=True, text=True,
                timeout=BLOCK_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return f"did not finish in {BLOCK_TIMEOUT_S} s"
        except FileNotFoundError as e:
            return f"cannot run {command[0]}: {e}"
        if out.returncode == 0:
            return None
        tail = (out.stderr or out.stdout).strip().replace(str(script), rel(block.path))
        hint = ""
        if kind == "js" and "ERR_MODULE_NOT_FOUND" in tail and self.js_package is None:
            hint = f"\n(no built npm package in {rel(JS_PACKAGE_DIR)}: build it, or set CAPELAB_NPM_PKG)"
        if kind == "python" and "ModuleNotFoundError" in tail:
            hint = f"\n(the examples run with {self.python}: is the package installed there?)"
        return f"{block.lang} block failed (exit {out.returncode}):\n" + tail[-3000:] + hint


def js_package() -> Path | None:
    """The built npm package's folder, if there is one."""
    folder = Path(os.environ.get("CAPELAB_NPM_PKG", JS_PACKAGE_DIR)).resolve()
    return folder if (folder / "package.json").is_file() else None


def run_examples(blocks: list[Block], failures: Failures) -> None:
    if not blocks:
        return
    with tempfile.TemporaryDirectory(prefix="capelab-examples-") as tmp:
        scratch = Path(tmp)
        (scratch / "data").symlink_to(ROOT / "data", target_is_directory=True)
        package = js_package()
        if package is not None:
            name = json.loads((package / "package.json").read_text())["name"]
            link = scratch / "node_modules" / name
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(package, target_is_directory=True)
        bin_dirs = {str(p.resolve().parent) for p in binaries().values()}
        env = {**os.environ, "PATH": os.pathsep.join([*sorted(bin_dirs), os.environ.get("PATH", "")])}
        default_python = ROOT / "tools/venv/bin/python"
        python = os.environ.get("CAPELAB_PYTHON", str(default_python))
        runner = Runner(scratch, python, package, env)
        for block in blocks:
            print(f"    {block.where} ({block.lang}{', no_run' if 'no_run' in block.attrs else ''})")
            if (problem := runner.run(block)) is not None:
                failures.add(block.where, problem)


# ---------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="build the book and check everything")
    check.add_argument("--no-build", action="store_true", help="skip `mdbook build`")
    check.add_argument("--no-run", action="store_true", help="do not run the examples")
    cli = sub.add_parser("cli", help="check (or --write) docs/src/cli-reference.md")
    cli.add_argument("--write", action="store_true", help="regenerate it from the binaries")
    args = parser.parse_args()

    failures = Failures()
    if args.command == "cli":
        check_reference(args.write, failures)
    else:
        files = [ROOT / "README.md", *chapters_on_disk()]
        pending = missing_chapters(failures)
        check_structure(failures)
        texts = check_reference(False, failures)
        count = check_links(files, pending, failures)
        print(f"    {count} relative links checked in README.md and {len(files) - 1} chapters")
        if texts is not None:
            count = check_commands(files, texts, failures)
            print(f"    {count} cape and capelab-relay commands checked against their --help")
        runnable = check_blocks(files, failures)
        if not args.no_build:
            build(pending)
        if not args.no_run and texts is None:
            print("    examples not run: they call the binaries, which are not built (above)")
        elif not args.no_run:
            run_examples(runnable, failures)
    if failures:
        print(f"\nthe book: {len(failures.items)} problem(s)\n", file=sys.stderr)
        for item in failures.items:
            print(f"  {item}\n", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
