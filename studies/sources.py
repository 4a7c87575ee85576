"""The published documents the studies reproduce, by title.

The transcribed data (studies/data/*.csv) and the comparison rows cite a document by its file name, which
is stable and checkable; people read the report, so it names each document by its title and a short name
(`cite`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    file: str  # the document's file name, as the transcribed data cite it
    short: str  # how the report's sentences, captions and tables name it
    title: str
    authors: str
    published: str
    gives: str  # what the studies take from it, as a sentence

    @property
    def reference(self) -> str:
        return f"{self.authors}, “{self.title}”, {self.published}"


STAR_2006 = Source(
    file="003_867e2db8593b7725.txt",
    short="STAR 2006",
    title="HPSS Performance study",
    authors="STAR computing (BNL)",
    published="STAR computing pages, 2006",
    gives="Tape efficiency against file size and files per mount, STAR's observed rates and file sizes, "
    "and the DataCarousel's queue depth and grouping by tape",
)
GLASGOW_2010 = Source(
    file="000_5f99fa0da61b6dda.txt",
    short="Glasgow CHEP 2010",
    title="Establishing Applicability of SSDs to LHC Tier-2 Hardware Configuration",
    authors="S. C. Skipsey, W. Bhimji, M. Kenyon",
    published="CHEP 2010, Taipei (arXiv:1102.3114)",
    gives="Worker-node job efficiency with SSD, HDD and RAID under 8 and 24 concurrent analysis jobs, "
    "long-term efficiencies and price/performance",
)
GRIDPP_WIKI = Source(
    file="001_f186e70e6529aa00.txt",
    short="GridPP wiki",
    title="Tier-2 SSD Study",
    authors="GridPP",
    published="GridPP wiki",
    gives="The raw HammerCloud runs behind the Glasgow paper",
)
BNL_2009 = Source(
    file="002_17936f0b5c29b893.txt",
    short="BNL CHEP 2009",
    title="SSD tests at PROOF farm at BNL",
    authors="M. Ernst, S. Panitkin, R. Petkus, O. Rind, T. Wenaus",
    published="CHEP 2009, Prague (slides)",
    gives="How many PROOF workers an HDD, a RAID0 and an SSD sustain, and one worker's read rate",
)
SOURCES = {source.file: source for source in (STAR_2006, GLASGOW_2010, GRIDPP_WIKI, BNL_2009)}
# The Glasgow paper's text comes with its tables flattened under these run-together headings.
_SECTIONS = {
    "primaryresults": "primary results",
    "longtermtest": "long-term test",
    "priceperform": "price/performance",
}


def cite(source: str) -> str:
    """A comparison's source ("<file> <where in it>") with the document named by its short name:
    '000_5f99fa0da61b6dda.txt primaryresults' -> 'Glasgow CHEP 2010, primary results'."""
    document, _, where = source.partition(" ")
    known = SOURCES.get(document)
    if known is None:
        return source
    where = where.strip().removeprefix("(").removesuffix(")")
    where = _SECTIONS.get(where, where)
    return f"{known.short}, {where}" if where else known.short
