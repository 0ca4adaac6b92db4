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
MIN_TOKENS = 1000  # docs/dump-format.md: every shipped prompt has 1,000 <= T <= 4,096

NEEDLE_TEXT = f"One of the special magic numbers for {NEEDLE_KEY} is: {NEEDLE_VALUE}."


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


def _python_doc_topics(keys: list[str]) -> str:
    """Prose of the Python Language Reference as shipped in the stdlib (pydoc_data/topics.py)."""
    path = os.path.join(PY_LIB, "pydoc_data", "topics.py")
    spec = importlib.util.spec_from_file_location("debian_pydoc_topics", path)
    topics = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(topics)

    return "\n\n".join(topics.topics[k].strip() for k in keys)


def _paragraphs(text: str) -> list[str]:
    return [p for p in text.split("\n\n") if p.strip()]


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
    code_path = os.path.join(PY_LIB, "textwrap.py")
    code = open(code_path, encoding="utf-8").read().split("\n")
    specs.append(PromptSpec(
        name="code_textwrap", kind="code", source_path=code_path, license="PSF-2.0",
        license_file="licenses/PSF-2.0.txt", description="Python standard library textwrap.py, from the start",
        question="In this code, what does the TextWrapper option break_on_hyphens control?",
        target_tokens=1060, document=lambda n: "\n".join(code[:n]), units=len(code), file=code_path))

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
    if length(lo) < MIN_TOKENS:
        raise ValueError(f"{spec.name}: only {length(lo)} tokens, below the format's minimum {MIN_TOKENS}")
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids = enc["input_ids"]
    needle = None
    if spec.needle_text is not None:
        start = text.index(spec.needle_text)
        assert text.count(spec.needle_text) == 1 and text.count(NEEDLE_VALUE) == 1, "needle must be unique"
        end = start + len(spec.needle_text)
        covering = [i for i, (a, b) in enumerate(enc["offset_mapping"]) if a < end and b > start]
        needle = {"begin": covering[0], "end": covering[-1] + 1, "text": spec.needle_text,
                  "char_begin": start, "char_end": end}
        assert covering == list(range(needle["begin"], needle["end"])), "needle tokens must be contiguous"
        assert NEEDLE_VALUE in tokenizer.decode(ids[needle["begin"]:needle["end"]])
    return text, ids, lo, needle


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
