"""Sentence splitting and word tokenization for English prose.

``split_sentences`` is a rule-based splitter written for edited prose (novels, Wikipedia). NLTK's
punkt parameters are not installed here, and punkt itself splits dialogue such as
``"Where are you going?" asked he.`` or ``"What?" I cried.`` into two sentences; novels are full
of those. The rules:

* a boundary is a run of ``.``, ``?``, ``!`` or ``…`` (closing quotes and brackets may follow),
  then whitespace, then a word that starts with an upper-case letter (an opening quote or
  bracket may come first). Lower case, digits and other punctuation after the stop never start
  a new sentence (``Oh! how kind``, ``p. 5``, ``etc. and so on``);
* a period after a known abbreviation (``Mr.``, ``Mrs.``, ``Dr.``, ``St.``, ``Capt.``, ...) or a
  single-letter initial (``E. Nesbit``, ``J. R. R.``) is not a boundary; ``I.`` is;
* a period after a dotted token (``U.S.``, ``p.m.``, ``i.e.``) is a boundary only before a
  frequent sentence starter (``The``, ``He``, ``It``, ...);
* an ellipsis before ``I`` is not a boundary (``and . . . I think``);
* ``"What?" I cried.`` / ``"Yes!" Tom said.``: after a quoted question or exclamation, a
  capitalized word followed by a speech verb continues the sentence.

Its measured error rate on hand-checked novel text is in ``docs/guides/data.md``.

Word tokens come from :mod:`qt_hard.data.wordlevel` (NLTK's Treebank rules in ``tokenizers``).
"""

from __future__ import annotations

import re

# Bumped whenever a change to the splitter changes its output: cached corpora are keyed on it.
SPLITTER_VERSION = "rules-1"

# Lower-case, without the final period. Titles and common abbreviations of edited English
# prose. Left out on purpose: "no" ("No. I won't." is a sentence; "No. 5" never splits anyway
# because a digit cannot start a sentence), "etc" (often ends a sentence), "esq" (ends letters).
ABBREVIATIONS = frozenset(
    """
    mr mrs messrs ms mme mmes mlle mlles mm dr drs prof profs rev revd hon st ste
    capt col gen lt lieut sgt serg maj adm cmdr comdr cdr gov sen rep pres supt insp fr
    jr sr bros co corp inc ltd vs viz cf ca approx dept univ
    jan feb mar apr jun jul aug sep sept oct nov dec mon tues wed thurs fri sat
    mt ft ave blvd
    """.split()
)

# Capitalized words that very often start a sentence: after a dotted token such as "U.S." or
# "p.m." a period is a boundary only before one of these.
SENTENCE_STARTERS = frozenset(
    """
    A An The This That These Those There Then Thus Here He She It I We You They His Her Its
    Our Their My Your But And Or So Yet Still In On At As If When While After Before Although
    Though Since Because However Meanwhile Now What Who Why How Where Which Not No Yes Some
    Many Most All Each Every One Two Later Today During From For To By With Of
    """.split()
)

SPEECH_VERBS = frozenset(
    """
    said says asked asks cried cries replied answered exclaimed shouted whispered continued
    added returned remarked muttered called inquired enquired began repeated observed demanded
    screamed murmured rejoined interrupted laughed sighed protested declared suggested resumed
    responded retorted explained persisted insisted urged pleaded groaned gasped growled yelled
    roared thought wondered went
    """.split()
)

_OPENERS = "\"'“‘([{_«"
_CLOSERS = "\"'”’)]}_»"

# A candidate boundary: terminal punctuation, optional closers, then whitespace.
_CANDIDATE = re.compile(r"[.?!…]+[\"'”’)\]}_»]*(?=\s)")
_LEADING_PUNCT = re.compile(r"^[^\w]+")


def _ends_with_period(text: str, end: int) -> bool:
    """``text[:end].rstrip().endswith(".")`` without copying the prefix (spaces are single " ")."""
    j = end
    while j > 0 and text[j - 1] == " ":
        j -= 1
    return j > 0 and text[j - 1] == "."


def _is_boundary(text: str, start: int, end: int) -> bool:
    """Whether the candidate ``text[start:end]`` (a stop run plus closers) ends a sentence."""
    nxt = text[end : end + 200].split(None, 2)[:2]  # the next two words
    if not nxt:
        return False
    first = nxt[0].lstrip(_OPENERS)
    if first[:1] == "’" and first[1:2].isupper():
        first = first[1:]  # ’Tis
    if not first or not first[0].isupper():
        return False
    run = text[start:end]
    core = run.rstrip(_CLOSERS)
    closed = len(core) < len(run)
    # The token the stop is attached to ("Mr." -> "Mr", "U.S." -> "U.S"). split_sentences has
    # collapsed every whitespace run to one " ", so the last space is the token's start (searching
    # for newlines and tabs too scanned the whole paragraph per candidate: quadratic time).
    ws = text.rfind(" ", 0, start)
    word = _LEADING_PUNCT.sub("", text[ws + 1 : start])

    # A closed quote followed by a speech verb goes on: "What?" I cried.
    said = closed and len(nxt) > 1 and nxt[1].rstrip(",.;:!?").lower() in SPEECH_VERBS
    if "?" in core or "!" in core:
        return not said
    spaced_ellipsis = not word and _ends_with_period(text, start)
    if "…" in core or len(core) > 1 or spaced_ellipsis:
        # An ellipsis: a boundary unless "I" follows a three-dot one (". . . I think so");
        # four dots are a period plus an ellipsis ("strength.... I love you").
        dots = core.count(".")
        i = start - 1
        while i >= 0 and text[i] in ". ":
            dots += text[i] == "."
            i -= 1
        if dots >= 4:
            return True
        return not (first == "I" or first.startswith(("I'", "I’")))
    # A single period.
    if closed:
        return not said
    if not word:
        return True
    low = word.lower()
    if low in ABBREVIATIONS:
        return False
    if len(word) == 1 and word.isalpha():
        return word == "I"  # initials ("E. Nesbit", "J. R. R.") are not boundaries; "I." is
    if "." in word:
        return first.rstrip(",.;:!?'’\"”") in SENTENCE_STARTERS
    return True


def split_sentences(paragraph: str) -> list[str]:
    """Split one paragraph (already joined into one line or not) into sentences.

    Whitespace inside each sentence is collapsed to single spaces; empty input gives ``[]``.
    """
    # str.split() and the regex's \s both split on exactly the str.isspace() characters.
    text = " ".join(paragraph.split())
    if not text:
        return []
    out: list[str] = []
    last = 0
    for m in _CANDIDATE.finditer(text):
        if _is_boundary(text, m.start(), m.end()):
            sent = text[last : m.end()].strip()
            if sent:
                out.append(sent)
            last = m.end()
    tail = text[last:].strip()
    if tail:
        out.append(tail)
    return out
