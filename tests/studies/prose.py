"""What a study says to people (headlines, findings, captions) names its sources by title, never by the file
name of the transcribed document."""

from __future__ import annotations

import re

from studies.result import StudyResult

FILE_NAME = re.compile(r"\b\d{3}_[0-9a-f]{16}\.txt\b|\bseed \d{3}\b", re.IGNORECASE)


def naming_files(result: StudyResult) -> list[str]:
    texts = (*result.headlines, *result.findings, *(figure.caption for figure in result.figures))
    return [text for text in texts if FILE_NAME.search(text)]
