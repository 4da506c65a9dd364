"""The Porter (1980) stemmer exactly as ROUGE-1.5.5.pl applies it under ``-m`` (files2rouge's default).

Porter, "An algorithm for suffix stripping", Program 14(3), 1980, with the two
departures of Porter's own released implementations that ROUGE-1.5.5 carries
(step 2: -bli -> -ble and -logi -> -log) and ROUGE's change of 14 Feb 2004 to
step 4: a word ending in -ement first tries -ement only, then -ment and -ent
are tried in turn on what is left. ``y`` is a vowel after a consonant, and an
initial ``y`` is a consonant.

A word's measure m counts the vowel-consonant sequences of [C](VC)^m[V].
"""

from __future__ import annotations

import re
from functools import lru_cache

_CONSONANT = "[^aeiou]"
_VOWEL = "[aeiouy]"
_CONSONANTS = f"{_CONSONANT}[^aeiouy]*"
_VOWELS = f"{_VOWEL}[aeiou]*"
_M_ABOVE_0 = re.compile(f"^({_CONSONANTS})?{_VOWELS}{_CONSONANTS}")
_M_EQUALS_1 = re.compile(f"^({_CONSONANTS})?{_VOWELS}{_CONSONANTS}({_VOWELS})?$")
_M_ABOVE_1 = re.compile(f"^({_CONSONANTS})?{_VOWELS}{_CONSONANTS}{_VOWELS}{_CONSONANTS}")
_HAS_VOWEL = re.compile(f"^({_CONSONANTS})?{_VOWEL}")
_SHORT_CVC = re.compile(f"^{_CONSONANTS}{_VOWEL}[^aeiouwxy]$")  # *o with m = 1: consonant-vowel-consonant(not w,x,y)

STEP2 = {
    "ational": "ate", "tional": "tion", "enci": "ence", "anci": "ance", "izer": "ize", "bli": "ble",
    "alli": "al", "entli": "ent", "eli": "e", "ousli": "ous", "ization": "ize", "ation": "ate",
    "ator": "ate", "alism": "al", "iveness": "ive", "fulness": "ful", "ousness": "ous", "aliti": "al",
    "iviti": "ive", "biliti": "ble", "logi": "log",
}
STEP3 = {"icate": "ic", "ative": "", "alize": "al", "iciti": "ic", "ical": "ic", "ful": "", "ness": ""}
STEP4 = ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ou", "ism", "ate", "iti", "ous",
         "ive", "ize")


def _suffix_rule(table) -> re.Pattern:
    # alternatives in table order; the leftmost match is the longest suffix, as in Perl
    return re.compile("(" + "|".join(table) + ")$")


_STEP2_RE, _STEP3_RE, _STEP4_RE = _suffix_rule(STEP2), _suffix_rule(STEP3), _suffix_rule(STEP4)


def _replace_if(word: str, pattern: re.Pattern, condition: re.Pattern, table=None) -> str:
    """Strip (or map through ``table``) the suffix ``pattern`` finds when the stem left satisfies ``condition``."""
    match = pattern.search(word)
    if match is None:
        return word
    stem = word[: match.start()]
    if not condition.search(stem):
        return word
    return stem + (table[match.group(1)] if table else "")


def _step1(word: str) -> str:
    # 1a: sses -> ss, ies -> i, s -> '' (not after s)
    if re.search("(ss|i)es$", word):
        word = word[:-2]
    elif re.search("[^s]s$", word):
        word = word[:-1]
    # 1b: (m>0) eed -> ee; (*v*) ed / ing -> '' and tidy the stem
    if word.endswith("eed"):
        if _M_ABOVE_0.search(word[:-3]):
            word = word[:-1]
    else:
        match = re.search("(ed|ing)$", word)
        if match and _HAS_VOWEL.search(word[: match.start()]):
            word = word[: match.start()]
            if re.search("(at|bl|iz)$", word):
                word += "e"
            elif re.search(r"([^aeiouylsz])\1$", word):
                word = word[:-1]
            elif _SHORT_CVC.search(word):
                word += "e"
    # 1c: (*v*) y -> i
    if word.endswith("y") and _HAS_VOWEL.search(word[:-1]):
        word = word[:-1] + "i"
    return word


def _step4(word: str) -> str:
    word = _replace_if(word, _STEP4_RE, _M_ABOVE_1)
    word = _replace_if(word, re.compile("ment$"), _M_ABOVE_1)
    if word.endswith("ent"):
        return _replace_if(word, re.compile("ent$"), _M_ABOVE_1)
    match = re.search("(s|t)ion$", word)
    if match and _M_ABOVE_1.search(word[: match.start() + 1]):  # the s / t stays
        word = word[: match.start() + 1]
    return word


def _step5(word: str) -> str:
    if word.endswith("e"):
        stem = word[:-1]
        if _M_ABOVE_1.search(stem) or (_M_EQUALS_1.search(stem) and not _SHORT_CVC.search(stem)):
            word = stem
    if word.endswith("ll") and _M_ABOVE_1.search(word):
        word = word[:-1]
    return word


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Porter stem of a lower-case ASCII word (words shorter than 3 letters are returned as they are)."""
    if len(word) < 3:
        return word
    initial_y = word[0] == "y"
    if initial_y:
        word = "Y" + word[1:]  # a consonant for every pattern above
    word = _step1(word)
    word = _replace_if(word, _STEP2_RE, _M_ABOVE_0, STEP2)
    word = _replace_if(word, _STEP3_RE, _M_ABOVE_0, STEP3)
    word = _step5(_step4(word))
    if initial_y:
        word = "y" + word[1:]
    return word
