"""The shipped prompts: real, redistributable text from files Debian installs, cut to a token target.

Each prompt is a single user turn in the model's chat template (document, then the question) followed by
the assistant header, so the last W queries that SnapKV-style scorers observe include the question.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from typing import Callable, Optional

# Debian's Python stdlib (packages libpython3.11-minimal / libpython3.11-stdlib), not the stdlib of whatever
# interpreter runs the exporter, so the shipped text is a file a Debian package installs.
PY_LIB = "/usr/lib/python3.11"
PSF_LICENSE_FILE = "/usr/share/doc/python3.11/copyright"
CC0_FILE = "/usr/share/common-licenses/CC0-1.0"

# RULER-style needle: a unique key/value fact that occurs nowhere else in the haystack.
NEEDLE_KEY = "amber-lighthouse"
NEEDLE_VALUE = "4817302"
MIN_TOKENS = 1000  # docs/dump-format.md: every prompt of the short set has 1,000 <= T <= 4,096


# The long set's needles (RULER multi-key): distinct keys and 7-digit values, each at its own depth (fraction
# of the kept haystack's characters). None of the values occurs in the haystack (build() asserts it).
MULTI_NEEDLES = [("amber-lighthouse", "4817302", 0.10), ("copper-orchard", "9260418", 0.35),
                 ("velvet-harbor", "3058761", 0.60), ("silent-glacier", "7142593", 0.85)]
LONG_TOKENS = 4096  # RULER-4096's length
LONG_CONTEXT_TOKENS = 16640  # at least 16,384 after cutting at a paragraph boundary


def needle_sentence(key: str, value: str) -> str:
    return f"One of the special magic numbers for {key} is: {value}."


NEEDLE_TEXT = needle_sentence(NEEDLE_KEY, NEEDLE_VALUE)


@dataclasses.dataclass
class PromptSpec:
    name: str
    kind: str
    source_path: str
    license: str
    license_file: str
    description: str
    question: str
    target_tokens: int  # the prompt is the longest unit prefix within this many tokens
    # Returns the document text given how many of its units (lines / paragraphs) to keep.
    document: Callable[[int], str]
    units: int
    needle_text: Optional[str] = None
    file: str = ""  # the installed file the text comes from (for its Debian package)
    needles: tuple = ()  # the long set's (key, value, depth) needles; needle_text is the short set's one
    min_tokens: int = MIN_TOKENS
    answer_tokens: int = 24  # greedy answer length (several 7-digit values need more than one)


def _python_doc_topics(keys: list[str]) -> str:
    """Prose of the Python Language Reference as shipped in the stdlib (pydoc_data/topics.py)."""
    path = os.path.join(PY_LIB, "pydoc_data", "topics.py")
    spec = importlib.util.spec_from_file_location("debian_pydoc_topics", path)
    topics = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(topics)

    return "\n\n".join(topics.topics[k].strip() for k in keys)


def _paragraphs(text: str) -> list[str]:
    return [p for p in text.split("\n\n") if p.strip()]


def _insert_at_depths(paragraphs: list[str], sentences: list[tuple[str, float]]) -> str:
    """Inserts each (sentence, depth) at the paragraph boundary nearest to that fraction of the characters."""
    total = sum(len(p) for p in paragraphs)
    out, run, pending = [], 0, sorted(sentences, key=lambda s: s[1])
    for p in paragraphs:
        while pending and run + len(p) / 2 >= pending[0][1] * total:
            out.append(pending.pop(0)[0])
        out.append(p)
        run += len(p)
    return "\n\n".join(out + [s for s, _ in pending])


def _code_textwrap_spec(name: str, target: int, **extra) -> PromptSpec:
    """The stdlib textwrap module, from the start, cut at a line boundary (both sets)."""
    code_path = os.path.join(PY_LIB, "textwrap.py")
    code = open(code_path, encoding="utf-8").read().split("\n")
    return PromptSpec(
        name=name, kind="code", source_path=code_path, license="PSF-2.0",
        license_file="licenses/PSF-2.0.txt", description="Python standard library textwrap.py, from the start",
        question="In this code, what does the TextWrapper option break_on_hyphens control?",
        target_tokens=target, document=lambda n: "\n".join(code[:n]), units=len(code), file=code_path, **extra)


def _multi_needle_spec(name: str, topics: list[str], target: int, min_tokens: int) -> PromptSpec:
    topics_path = os.path.join(PY_LIB, "pydoc_data", "topics.py")
    hay = _paragraphs(_python_doc_topics(topics))
    sentences = [(needle_sentence(k, v), depth) for k, v, depth in MULTI_NEEDLES]
    keys = ", ".join(k for k, _, _ in MULTI_NEEDLES[:-1]) + " and " + MULTI_NEEDLES[-1][0]
    return PromptSpec(
        name=name, kind="needle", source_path=topics_path + f" (topics {', '.join(topics)})", license="PSF-2.0",
        license_file="licenses/PSF-2.0.txt",
        description=f"Python Language Reference prose (haystack) with {len(MULTI_NEEDLES)} inserted RULER-style "
                    "key/value needles at depths " + ", ".join(f"{d:.0%}" for _, _, d in MULTI_NEEDLES),
        question=f"What are the special magic numbers for {keys} mentioned in the provided text?",
        target_tokens=target, document=lambda n: _insert_at_depths(hay[:n], sentences), units=len(hay),
        file=topics_path, needles=tuple(MULTI_NEEDLES), min_tokens=min_tokens, answer_tokens=64)


def long_prompts() -> list[PromptSpec]:
    """The long set (T of about 4,096, RULER-4096's length): multi-needle, QA, code and summary."""
    topics_path = os.path.join(PY_LIB, "pydoc_data", "topics.py")
    low = LONG_TOKENS - 256
    specs = [_multi_needle_spec("needle_4k", ["execmodel", "naming", "import"], LONG_TOKENS, low)]

    compound = _python_doc_topics(["compound"]).split("\n")
    specs.append(PromptSpec(
        name="qa_compound_4k", kind="qa", source_path=topics_path + " (topic compound)", license="PSF-2.0",
        license_file="licenses/PSF-2.0.txt",
        description="Python Language Reference: compound statements, from the start, cut at a line boundary",
        question="According to this text, when is the else clause of a for loop executed, and when is it skipped?",
        target_tokens=LONG_TOKENS, document=lambda n: "\n".join(compound[:n]), units=len(compound),
        file=topics_path, min_tokens=low, answer_tokens=48))

    specs.append(_code_textwrap_spec("code_textwrap_4k", LONG_TOKENS, min_tokens=low, answer_tokens=48))

    statements = ["try", "exceptions", "raise", "with", "context-managers", "assert"]
    lines = _python_doc_topics(statements).split("\n")
    specs.append(PromptSpec(
        name="summary_exceptions_4k", kind="summary", source_path=topics_path + f" (topics {', '.join(statements)})",
        license="PSF-2.0", license_file="licenses/PSF-2.0.txt",
        description="Python Language Reference: try, exceptions, raise, with, context managers and assert, "
                    "from the start, cut at a line",
        question="Summarize the text above in three sentences.", target_tokens=LONG_TOKENS,
        document=lambda n: "\n".join(lines[:n]), units=len(lines), file=topics_path, min_tokens=low,
        answer_tokens=48))
    return specs


def long_context_prompts() -> list[PromptSpec]:
    """One multi-needle prompt of T >= 16,384 (scores, attention and selections; no Q/K/V)."""
    return [_multi_needle_spec("needle_16k", ["execmodel", "naming", "import", "compound", "assignment", "calls",
                                              "specialnames"], LONG_CONTEXT_TOKENS, 16384)]


def default_prompts() -> list[PromptSpec]:
    topics_path = os.path.join(PY_LIB, "pydoc_data", "topics.py")
    specs = []

    # 1. Needle in a haystack: Python reference prose, needle at ~50 % depth of whatever is kept.
    hay = _paragraphs(_python_doc_topics(["execmodel", "naming", "import"]))

    def needle_doc(n: int) -> str:
        kept = hay[:n]
        # Insert at the paragraph boundary nearest to half of the kept characters (50 % depth).
        half, run, mid = sum(len(p) for p in kept) / 2, 0, 0
        while mid < len(kept) and run + len(kept[mid]) / 2 < half:
            run += len(kept[mid])
            mid += 1
        return "\n\n".join(kept[:mid] + [NEEDLE_TEXT] + kept[mid:])

    specs.append(PromptSpec(
        name="needle", kind="needle", source_path=topics_path + " (topics execmodel, naming, import)",
        license="PSF-2.0", license_file="licenses/PSF-2.0.txt",
        description="Python Language Reference prose (haystack) with one inserted RULER-style key/value needle",
        question=f"What is the special magic number for {NEEDLE_KEY} mentioned in the provided text?",
        target_tokens=1250, document=needle_doc, units=len(hay), needle_text=NEEDLE_TEXT, file=topics_path))

    # 2. QA over a long real document: the CC0 1.0 legal code (itself dedicated to the public domain).
    cc0 = open(CC0_FILE, encoding="utf-8").read().split("\n")
    specs.append(PromptSpec(
        name="qa_cc0", kind="qa", source_path=CC0_FILE, license="CC0-1.0", license_file="licenses/CC0-1.0.txt",
        description="Creative Commons CC0 1.0 Universal legal code, from the start, cut at a line boundary",
        question="According to section 2 of this document, for what duration does the Affirmer waive the rights?",
        target_tokens=1050, document=lambda n: "\n".join(cc0[:n]), units=len(cc0), file=CC0_FILE))

    # 3. Source code: the stdlib textwrap module, from the start, cut at a line boundary.
    specs.append(_code_textwrap_spec("code_textwrap", 1060))

    # 4. Summarization of technical prose: the reference's description of the try statement.
    tryl = _python_doc_topics(["try", "exceptions"]).split("\n")
    specs.append(PromptSpec(
        name="summary_try", kind="summary", source_path=topics_path + " (topics try, exceptions)",
        license="PSF-2.0", license_file="licenses/PSF-2.0.txt",
        description="Python Language Reference: the try statement and exceptions, from the start, cut at a line",
        question="Summarize the text above in three sentences.",
        target_tokens=1060, document=lambda n: "\n".join(tryl[:n]), units=len(tryl), file=topics_path))
    return specs


def render(tokenizer, spec: PromptSpec, n_units: int) -> str:
    content = spec.document(n_units) + "\n\n" + spec.question
    if tokenizer.chat_template is None:
        return (tokenizer.bos_token or "") + content + "\n"
    return tokenizer.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True,
                                         tokenize=False)


def build(tokenizer, spec: PromptSpec):
    """The longest unit prefix whose rendered prompt stays within spec.target_tokens (binary search)."""

    def length(n: int) -> int:
        return len(tokenizer.encode(render(tokenizer, spec, n), add_special_tokens=False))

    lo, hi = 1, spec.units
    if length(lo) > spec.target_tokens:
        raise ValueError(f"{spec.name}: even one unit exceeds {spec.target_tokens} tokens")
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if length(mid) <= spec.target_tokens:
            lo = mid
        else:
            hi = mid - 1
    text = render(tokenizer, spec, lo)
    if length(lo) < spec.min_tokens:
        raise ValueError(f"{spec.name}: only {length(lo)} tokens, below the set's minimum {spec.min_tokens}")
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids = enc["input_ids"]

    def span(sentence: str, value: str) -> dict:
        start = text.index(sentence)
        assert text.count(sentence) == 1 and text.count(value) == 1, f"needle {value} must be unique"
        end = start + len(sentence)
        covering = [i for i, (a, b) in enumerate(enc["offset_mapping"]) if a < end and b > start]
        found = {"begin": covering[0], "end": covering[-1] + 1, "text": sentence, "char_begin": start,
                 "char_end": end}
        assert covering == list(range(found["begin"], found["end"])), "needle tokens must be contiguous"
        assert value in tokenizer.decode(ids[found["begin"]:found["end"]])
        return found

    # One entry per needle, in text order; the short set's one needle sits at ~50 % depth.
    wanted = spec.needles or ([(NEEDLE_KEY, NEEDLE_VALUE, 0.5)] if spec.needle_text is not None else [])
    needles = [dict(span(needle_sentence(k, v), v), key=k, value=v, depth=d) for k, v, d in wanted]
    assert [n["begin"] for n in needles] == sorted(n["begin"] for n in needles), "needles out of depth order"
    return text, ids, lo, needles


def debian_package(path: str) -> Optional[dict]:
    """The Debian package (and version) that installed `path`, via dpkg; None where dpkg does not know it."""
    import subprocess

    try:
        owner = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True, check=True).stdout
        package = owner.split(":")[0] if owner.count(":") < 2 else ":".join(owner.split(":")[:2])
        version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True,
                                 check=True).stdout
        return {"package": package, "version": version}
    except (OSError, subprocess.CalledProcessError):
        return None
