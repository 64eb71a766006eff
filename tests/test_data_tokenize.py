"""Sentence splitter and word tokens."""

import pytest

from qt_hard.data.tokenize import split_sentences


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Mr. Weston was a man. He said so.", ["Mr. Weston was a man.", "He said so."]),
        (
            '"Where are you going?" asked he. "Home!" she cried.',
            ['"Where are you going?" asked he.', '"Home!" she cried.'],
        ),
        ("“What?” I cried. “Nothing,” said he.", ["“What?” I cried.", "“Nothing,” said he."]),
        ("J. R. R. Tolkien wrote it. I read it.", ["J. R. R. Tolkien wrote it.", "I read it."]),
        ('He said, "I will go." Then he went.', ['He said, "I will go."', "Then he went."]),
        ("Oh! how kind. It was I. Then what?", ["Oh! how kind.", "It was I.", "Then what?"]),
        ("It was 5 p.m. The sun set.", ["It was 5 p.m.", "The sun set."]),
        (
            "He lived in the U.S. for years. The U.S. Army came.",
            ["He lived in the U.S. for years.", "The U.S. Army came."],
        ),
        ("and . . . I think so . . . Yes.", ["and . . . I think so . . .", "Yes."]),
        ("his strength.... I love you.", ["his strength....", "I love you."]),
        ("See p. 5 and No. 7, etc. and more.", ["See p. 5 and No. 7, etc. and more."]),
        ("What air! ’Tis fine.", ["What air!", "’Tis fine."]),
        ("  no final stop  ", ["no final stop"]),
        ("", []),
    ],
)
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_split_joins_hard_wraps_and_keeps_text():
    para = "She was the youngest\nof the two daughters.   Her mother\nhad died."
    assert split_sentences(para) == ["She was the youngest of the two daughters.", "Her mother had died."]
