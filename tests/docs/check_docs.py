#!/usr/bin/env python3
"""The docs test (CTest `docs_test`): what the documentation cites exists, and the exit codes it documents
are the ones the commands return.

Usage: check_docs.py ROOT [KVAUDIT_BIN]   (KVAUDIT_BIN defaults to ROOT/build/kvaudit)

Part 1, citations (reads the sources; needs no build):
  * Scanned: README.md, docs/*.md and proofs/*.md (whole text), and the comments (// and /* */; # and Python
    docstrings) of *.h *.hpp *.cpp *.cu *.inl *.py *.sh under the source folders in SOURCE_DIRS. This file is
    not scanned: its own examples would match.
  * A path is a token that starts with a top-level folder of the repository (TOP_DIRS) followed by "/", not
    preceded by a letter, digit, ".", "/" or "-" (so build/benchmarks/x or a URL does not count), ending at
    whitespace, a quote, a backtick, a bracket, "," or ";" (trailing "." and ":" are sentence punctuation), or
    the target of a relative markdown link [text](target) in a .md file (resolved from that file's folder; a
    "#anchor" is dropped; http:, https:, mailto: and pure anchors are not paths).
  * Rules for tokens that are not one literal path (counted and reported in the summary, never dropped):
      - "{a,b}" is expanded and every expansion must exist ("oracle/partition_arith.{h,cpp}");
      - skipped: globs ("*", "?": "oracle/page_entrokv.*", "data/part*.bin" of an installed package),
        placeholders ("<...>", "{a|b}", "$VAR", "...", a path component holding a run of two or more capital
        N or X: "proofs/NN_name.md"), and build outputs (a component named build, build-*, out, or ending in
        .egg-info: "python/build/" exists only after a build).
  * A path ending in "/" must be a folder. A path whose last component has no extension must be a folder, a
    file, or the stem of files ("oracle/page_entrokv" for oracle/page_entrokv.{h,cpp}; a CMake target such as
    "fuzz/npy_fuzz" for fuzz/npy_fuzz.cpp). Any other path must be a file or a folder.
  * The old specification file is not in the repository: every citation of it ("SPEC", "SPEC.md", anywhere
    in the scanned files, string literals included, since they reach reports) is a problem, listed with the
    section it cites so it can be pointed at docs/specification.md, which keeps the section numbers.
    So is any citation of the report-schema page, which does not exist either.

Part 2, exit codes (runs KVAUDIT_BIN): the README's "Command reference" table gives each command's exit
codes. Each of budget, select, check, partition, page-select, check-pages and union-overhead is run on a good
input (exit 0, one JSON object on stdout), a "violating" input (check and check-pages: a claim the spec
cannot produce, exit 1; the others have no exit 1 for inputs, so a case that trips a finding without being
an error -- budget divergence, ChunkKV's short-context fallback, an infeasible partition, all-tied pages --
must still exit 0) and bad inputs (exit 2, nothing on stdout, exactly one stderr line starting "kvaudit: ").
Every observed code must also be one the README documents for that command. Inputs are small NPY (written
here: magic, header dict, little-endian float32) and JSON files in a temporary folder. Without the binary,
or with one that predates check-pages, part 2 prints SKIPPED and the script exits 77 (CTest: skipped)
unless part 1 found problems (exit 1).

Exit 0 when everything holds, 1 with one line per problem, 77 as above.
"""
import ast
import fnmatch
import glob
import io
import json
import os
import pathlib
import re
import struct
import subprocess
import sys
import tempfile
import tokenize

TOP_DIRS = ("core", "oracle", "audit", "reports", "api", "cli", "python", "tools", "tests", "proofs", "fuzz",
            "benchmarks", "scripts", "docs", "data", "cmake")
SOURCE_DIRS = ("core", "oracle", "audit", "reports", "api", "cli", "python", "tools", "tests", "proofs", "fuzz",
               "benchmarks", "scripts")
SELF = "tests/docs/check_docs.py"  # not scanned: its docstring's examples would match
C_LIKE = (".h", ".hpp", ".cpp", ".cu", ".inl")
SKIP_DIRS = {"build", ".venv", "venv", "__pycache__", "node_modules", ".git", ".pytest_cache", ".hypothesis"}

PATH_TOKEN = re.compile(r"(?<![\w./-])((?:%s)/(?:\{[^{}\s`]*\}|[^\s`'\"()\[\],;{}])*)" % "|".join(TOP_DIRS))
MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
OLD_SPEC = re.compile(r"\bSPEC(?:\.md)?\b(?P<tail>(?:\s+|\s*\(\s*)?sections?\s+(?P<sec>\d+(?:\s*[-–]\s*\d+)?))?")
SCHEMA_PAGE = "report-schema" + ".md"
PLACEHOLDER = re.compile(r"<|>|\$|\.\.\.|\{[^}]*\|[^}]*\}|(?:^|/)[^/]*(?:NN|XX)[^/]*")
GLOB = re.compile(r"[*?\[]")
BUILD_OUTPUT = re.compile(r"(?:^|/)(?:build|build-[^/]*|out|[^/]*\.egg-info)(?:/|$)")


def scanned_files(root):
    """(relative path, text, is_markdown) of every file part 1 reads."""
    out = []
    md = [root / "README.md"] + sorted((root / "docs").glob("*.md")) + sorted((root / "proofs").glob("*.md"))
    for p in md:
        if p.is_file():
            out.append((p, True))
    for d in SOURCE_DIRS:
        base = root / d
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(n for n in dirnames if n not in SKIP_DIRS and not n.endswith(".egg-info"))
            for f in sorted(filenames):
                p = pathlib.Path(dirpath) / f
                if p.suffix in C_LIKE + (".py", ".sh") and p.relative_to(root).as_posix() != SELF:
                    out.append((p, False))
    return [(p.relative_to(root).as_posix(), p.read_text(errors="replace"), m) for p, m in out]


def c_comments(text):
    """(line, comment text) of // and /* */ comments, string and character literals skipped."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            body = text[i + 2:j]
            for k, part in enumerate(body.split("\n")):
                out.append((line + k, part))
            line += body.count("\n")
            i = j + 2
        elif c in "\"'":
            if c == '"' and text[max(0, i - 1)] == "R" and re.match(r'"([^(\s]*)\(', text[i:]):  # raw string
                delim = re.match(r'"([^(\s]*)\(', text[i:]).group(1)
                j = text.find(")" + delim + '"', i)
                j = n if j < 0 else j + len(delim) + 2
            else:
                j = i + 1
                while j < n and text[j] != c and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                j += 1
            line += text.count("\n", i, j)
            i = j
        else:
            i += 1
    return out


def py_comments(text):
    """(line, text) of # comments and of module, class and function docstrings."""
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string[1:]))
        tree = ast.parse(text)
    except (SyntaxError, tokenize.TokenError):
        return [(k, l) for k, l in enumerate(text.split("\n"), 1)]  # unparsable: read it all
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                for k, part in enumerate(first.value.value.split("\n")):
                    out.append((first.lineno + k, part))
    return out


def sh_comments(text):
    out = []
    for k, l in enumerate(text.split("\n"), 1):
        m = re.search(r"(?:^|\s)#(?!!)(.*)", l)
        if m:
            out.append((k, m.group(1)))
    return out


def comment_lines(rel, text, markdown):
    if markdown:
        return list(enumerate(text.split("\n"), 1))
    if rel.endswith(C_LIKE):
        return c_comments(text)
    if rel.endswith(".py"):
        return py_comments(text)
    return sh_comments(text)


def expand_braces(token):
    m = re.search(r"\{([^{}|]*,[^{}|]*)\}", token)
    if not m:
        return [token]
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(token[:m.start()] + alt + token[m.end():])
    return out


def exists(root, rel):
    p = root / rel
    if rel.endswith("/"):
        return p.is_dir()
    if p.exists():
        return True
    return "." not in p.name and any(q.name.startswith(p.name + ".") for q in p.parent.glob(glob.escape(p.name) + ".*"))


class Stats:
    def __init__(self):
        self.paths = self.expanded = self.globs = self.placeholders = self.links = 0
        self.citations = 0
        self.commands = 0


def check_path_token(root, token, where, stats, problems, base=None):
    """One cited token; base is the folder a relative markdown link resolves from (None: the root)."""
    token = token.rstrip(".:")
    if not token or PLACEHOLDER.search(token) or BUILD_OUTPUT.search(token):
        stats.placeholders += 1
        return
    if GLOB.search(token):
        stats.globs += 1
        return
    if token.endswith(SCHEMA_PAGE):
        return  # listed once, by the citation check below
    candidates = expand_braces(token)
    if len(candidates) > 1:
        stats.expanded += 1
    for c in candidates:
        rel = os.path.normpath(os.path.join(base, c)) if base is not None else c
        rel = rel.replace(os.sep, "/") + ("/" if c.endswith("/") and not rel.endswith("/") else "")
        if rel.startswith("../") or rel == "..":
            problems.append(f"{where}: link {c} leaves the repository")
            continue
        stats.paths += 1
        if not exists(root, rel):
            kind = "folder" if rel.endswith("/") else "path"
            problems.append(f"{where}: cited {kind} {c} does not exist" + (f" (resolves to {rel})" if rel != c else ""))


def check_citations(root, stats, problems):
    spec_hits = []
    for rel, text, markdown in scanned_files(root):
        folder = os.path.dirname(rel)
        for line, part in comment_lines(rel, text, markdown):
            where = f"{rel}:{line}"
            linked = set()
            if markdown:
                for m in MD_LINK.finditer(part):
                    target = m.group(1).split("#", 1)[0]
                    if re.match(r"^(https?:|mailto:)", m.group(1)) or not target:
                        continue
                    stats.links += 1
                    linked.add(m.start(1))
                    check_path_token(root, target, where, stats, problems, base=folder)
            for m in PATH_TOKEN.finditer(part):
                if m.start(1) in linked:
                    continue  # a link target already resolved from the file's folder
                check_path_token(root, m.group(1), where, stats, problems)
        # Citations of files that are not in the repository: the whole text (string literals reach reports).
        lines = text.split("\n")
        for k, l in enumerate(lines, 1):
            following = re.sub(r"^\s*(?://+|#+|\*+|--)?\s*", "", lines[k]) if k < len(lines) else ""
            joined = l + " " + following  # "SPEC.md" at a line's end, "section 5" on the next
            for m in OLD_SPEC.finditer(l):
                stats.citations += 1
                tail = OLD_SPEC.match(joined, m.start())
                sec = tail.group("sec") if tail and tail.group("sec") else None
                sec = re.sub(r"\s*[-–]\s*", "-", sec) if sec else None
                to = f"docs/specification.md section{'s' if sec and '-' in sec else ''} {sec}" if sec else "docs/specification.md"
                spec_hits.append(f"{rel}:{k}: cites {m.group(0).split()[0]} (not in the repository): use {to}")
            if SCHEMA_PAGE in l:
                stats.citations += 1
                spec_hits.append(f"{rel}:{k}: cites docs/{SCHEMA_PAGE}, which does not exist")
    problems += spec_hits


# ---- Part 2: exit codes --------------------------------------------------------------------------------

def write_npy(path, rows):
    """A float32 NPY file (version 1.0) of a 1-D list or a list of equal-length rows."""
    two_d = isinstance(rows[0], (list, tuple))
    shape = (len(rows), len(rows[0])) if two_d else (len(rows),)
    flat = [v for r in rows for v in r] if two_d else list(rows)
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        ", ".join(map(str, shape)) + ("," if len(shape) == 1 else ""))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%df" % len(flat), *flat))


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)


def documented_codes(root):
    """command -> set of exit codes from the README's Command reference table."""
    readme = root / "README.md"
    text = readme.read_text() if readme.is_file() else ""
    section = text.split("## Command reference", 1)[-1].split("\n## ", 1)[0]
    codes = {}
    for row in section.split("\n"):
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)]
        if len(cells) < 4 or not cells[1].startswith("`kvaudit "):
            continue
        for name in re.findall(r"`kvaudit ([a-z-]+)", cells[1]):
            codes[name] = {int(x) for x in re.findall(r"(?<![\w.])([0-9])(?![\w.])", cells[-2])}
    return codes


def attention(heads, tokens, seed):
    """Rows that are distributions with dyadic entries (float32-exact, sum exactly 1), distinct per head."""
    rows = []
    for h in range(heads):
        w = [((t * 7 + h * 13 + seed) % 17) + 1 for t in range(tokens)]
        w[(5 * h + 20) % tokens] += 200  # a peak per head, away from the sinks
        denominator = 1 << (sum(w) - 1).bit_length()  # a power of two >= the sum, so w / denominator is exact
        w[-1] += denominator - sum(w)
        rows.append([x / denominator for x in w])
    return rows


def run_cases(root, binary, problems, stats):
    doc = documented_codes(root)
    if not doc:
        problems.append("README.md: no Command reference table with exit codes")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="kvaudit_docs_"))
    f = lambda name: str(tmp / name)

    def run(cmd, args, kind, expect, *, check_json=None):
        stats.commands += 1
        proc = subprocess.run([binary, cmd] + args, capture_output=True, text=True, timeout=120)
        label = f"kvaudit {cmd} ({kind}: {' '.join(args)})"
        if cmd not in doc:
            problems.append(f"README.md: Command reference has no row for `kvaudit {cmd}`")
        elif proc.returncode not in doc[cmd]:
            problems.append(f"{label}: exit {proc.returncode}, README documents {sorted(doc[cmd])}")
        if proc.returncode != expect:
            msg = (proc.stderr.strip().splitlines() or [""])[0][:160]
            problems.append(f"{label}: exit {proc.returncode}, expected {expect}" + (f"; stderr: {msg}" if msg else ""))
            return None
        if expect == 2:
            err = [l for l in proc.stderr.split("\n") if l.strip()]
            if len(err) != 1 or not err[0].startswith("kvaudit: "):
                problems.append(f"{label}: stderr must be one line starting 'kvaudit: ', got {err!r}")
            if proc.stdout.strip():
                problems.append(f"{label}: bad input wrote to stdout: {proc.stdout.strip()[:80]!r}")
            return None
        try:
            out = json.loads(proc.stdout)
        except ValueError:
            problems.append(f"{label}: stdout is not one JSON object: {proc.stdout[:80]!r}")
            return None
        if check_json:
            why = check_json(out)
            if why:
                problems.append(f"{label}: {why}")
        return out

    # budget: the table says 0, 2; a budget divergence (T = 10, rho 0.8: exact 2, kvpress 1) is a finding, exit 0.
    run("budget", ["--tokens", "25", "--compression-ratio", "0.5", "--chunk-length", "10"], "good", 0)
    run("budget", ["--tokens", "10", "--compression-ratio", "0.8"], "divergence", 0,
        check_json=lambda o: None if (o.get("exact_budget"), o.get("kvpress_float_budget")) == (2, 1)
        else f"expected exact 2, kvpress 1, got {o.get('exact_budget')}, {o.get('kvpress_float_budget')}")
    run("budget", ["--tokens", "10", "--compression-ratio", "1.5"], "bad ratio", 2)
    run("budget", ["--tokens", "0", "--compression-ratio", "0.5"], "bad tokens", 2)

    # select and check on two heads of distinct scores, T = 25 (two complete chunks and a partial one).
    scores = [[((t * 37 + h * 11) % 29) / 8.0 + h for t in range(25)] for h in range(2)]
    write_npy(f("scores.npy"), scores)
    write_npy(f("scores_short.npy"), [row[:7] for row in scores])
    nan_scores = [row[:] for row in scores]
    nan_scores[1][3] = float("nan")
    write_npy(f("scores_nan.npy"), nan_scores)
    sel = ["--method", "eg-chunkkv", "--scores", f("scores.npy"), "--compression-ratio", "0.5", "--chunk-length", "10"]
    out = run("select", sel, "good", 0)
    run("select", ["--method", "chunkkv", "--scores", f("scores_short.npy"), "--compression-ratio", "0.5",
                   "--chunk-length", "10"], "fallback T < c", 0)
    run("select", sel[:3] + [f("scores_nan.npy")] + sel[4:], "bad NaN", 2)
    run("select", sel[:5] + ["1.5"] + sel[6:], "bad ratio", 2)
    kept = out.get("kept") if isinstance(out, dict) else None
    if isinstance(kept, list) and kept:
        write_json(f("kept_good.json"), {"kept": kept})
        x = [scores[0][t] + scores[1][t] for t in range(25)]
        worst = sorted(sorted(range(25), key=lambda t: (x[t], t))[:len(kept)])  # the lowest scores: never chosen
        if worst == sorted(kept):
            problems.append("internal: the violating claim equals the selection; pick other scores")
        write_json(f("kept_bad.json"), {"kept": worst})
        write_json(f("kept_malformed.json"), {"kept": "0,1,2"})
        chk = sel + ["--selection"]
        run("check", chk + [f("kept_good.json")], "good", 0)
        run("check", chk + [f("kept_bad.json")], "violating", 1)
        run("check", chk + [f("kept_malformed.json")], "bad claim", 2)
    else:
        problems.append("kvaudit select: no 'kept' list in its answer; check not run")

    # partition: dyadic probabilities; an infeasible fixed-m budget is an answer (feasible false), not an error.
    write_npy(f("probs.npy"), [0.5, 0.25, 0.125, 0.0625, 0.0625])
    write_npy(f("probs_neg.npy"), [0.5, 0.75, -0.25])
    run("partition", ["--probs", f("probs.npy"), "--entropy-budget", "1.5"], "good", 0,
        check_json=lambda o: None if o.get("feasible") is True else "expected feasible true")
    run("partition", ["--probs", f("probs.npy"), "--entropy-budget", "0.5", "--groups", "5"], "infeasible", 0,
        check_json=lambda o: None if o.get("feasible") is False else "expected feasible false (every group a singleton: H = 1.875 bits)")
    run("partition", ["--probs", f("probs_neg.npy"), "--entropy-budget", "1"], "bad negative", 2)

    # Page-EntroKV: 6 query heads, G = 3 (two KV groups), T = 64, P = 8.
    attn = attention(6, 64, 3)
    write_npy(f("attn.npy"), attn)
    write_npy(f("attn_tied.npy"), [[1.0 / 64] * 64 for _ in range(6)])
    not_dist = [r[:] for r in attn]
    not_dist[2][10] += 0.25
    write_npy(f("attn_nodist.npy"), not_dist)
    neg = [r[:] for r in attn]
    neg[0][9], neg[0][10] = -neg[0][9], neg[0][10] + 2 * neg[0][9]
    write_npy(f("attn_neg.npy"), neg)
    pg = ["--group-size", "3", "--page-size", "8", "--compression-ratio", "0.5"]
    out = run("page-select", ["--attn", f("attn.npy")] + pg, "good", 0)
    run("page-select", ["--attn", f("attn_tied.npy")] + pg, "all pages tied", 0)
    run("page-select", ["--attn", f("attn_nodist.npy")] + pg, "bad row sum", 2)
    run("page-select", ["--attn", f("attn.npy"), "--group-size", "4", "--page-size", "8", "--compression-ratio", "0.5"],
        "bad group size", 2)

    pages = None
    if isinstance(out, dict):
        pages = out.get("kept_pages")
        if pages is None and isinstance(out.get("groups"), list):
            pages = [g.get("kept_pages") for g in out["groups"] if isinstance(g, dict)]
    if not (isinstance(pages, list) and pages and all(isinstance(p, list) for p in pages)):
        problems.append("kvaudit page-select: no per-group 'kept_pages' lists in its answer; check-pages good/violating cases not run")
    else:
        n_pages = 64 // 8
        write_json(f("pages_good.json"), {"kept_pages": pages})
        wrong = [sorted(p) for p in pages]
        # Group 0 drops its highest non-sink page for a page the walk left out. Pages of these rows do not tie
        # (distinct page sums), so no order of tied pages produces the claim: exit 1.
        g0 = wrong[0]
        out_pages = [k for k in range(n_pages) if k not in g0]
        movable = [k for k in g0 if k != 0]  # page 0 holds the sinks: reserved
        if out_pages and movable:
            g0.remove(max(movable))
            g0.append(out_pages[-1])
            g0.sort()
        write_json(f("pages_bad.json"), {"kept_pages": wrong})
        cp = ["--attn", f("attn.npy")] + pg
        run("check-pages", cp + ["--claim", f("pages_good.json")], "good", 0)
        run("check-pages", cp + ["--claim", f("pages_good.json"), "--precision", "exact"], "good, exact", 0)
        if wrong != [sorted(p) for p in pages]:
            run("check-pages", cp + ["--claim", f("pages_bad.json")], "violating", 1)
        else:
            problems.append("internal: could not build a violating page claim")
    write_json(f("pages_malformed.json"), {"kept": [[0]]})
    run("check-pages", ["--attn", f("attn.npy")] + pg + ["--claim", f("pages_malformed.json")], "bad claim", 2)
    run("check-pages", ["--attn", f("attn_nodist.npy")] + pg + ["--claim", f("pages_malformed.json")], "bad row sum", 2)
    run("check-pages", ["--attn", f("attn.npy")] + pg + ["--claim", f("pages_malformed.json"), "--precision", "float16"],
        "bad precision", 2)

    # union-overhead: identical rows are the "violating" extreme (ratio exactly 1), still an answer.
    uo = ["--group-size", "3", "--compression-ratio", "0.75", "--page-size", "8"]
    run("union-overhead", ["--attn", f("attn.npy")] + uo, "good", 0)
    run("union-overhead", ["--attn", f("attn_tied.npy")] + uo, "identical heads", 0)
    run("union-overhead", ["--attn", f("attn_neg.npy")] + uo, "bad negative", 2)
    for p in tmp.iterdir():
        p.unlink()
    tmp.rmdir()


def binary_usable(binary):
    """None if the binary can run part 2, else why not."""
    if not os.path.isfile(binary) or not os.access(binary, os.X_OK):
        return f"{binary} not found"
    proc = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=60)
    if not re.search(r"^\s*check-pages\s", proc.stdout, re.M):
        return f"{binary} has no check-pages subcommand (stale build)"
    return None


def main():
    if len(sys.argv) < 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1]).resolve()
    binary = sys.argv[2] if len(sys.argv) > 2 else str(root / "build" / "kvaudit")
    stats, problems = Stats(), []
    check_citations(root, stats, problems)
    why_not = binary_usable(binary)
    if why_not is None:
        run_cases(root, binary, problems, stats)
    for p in problems:
        print(p)
    if why_not is not None:
        print(f"SKIPPED: exit-code checks: {why_not}")
    print(f"docs_test: {stats.paths} paths checked ({stats.links} markdown links, {stats.expanded} brace forms "
          f"expanded, {stats.globs} globs and {stats.placeholders} placeholders or build outputs skipped), "
          f"{stats.citations} citations of missing files, {stats.commands} commands run, {len(problems)} problems")
    if problems:
        return 1
    if why_not is not None:
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
