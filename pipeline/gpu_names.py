"""What a provider's GPU name says: the model, a memory size and a form factor.

`parse_name("NVIDIA H200 (141 GB SXM5)")` gives the model key `h200`, 141 GB and SXM. The model
key is the set of the words that name a board, in any order and any spelling of case, spaces,
hyphens and underscores. Words that say something else are taken out of it:

- vendor words (`NVIDIA`, `GeForce`, `Tesla`, `Quadro`, `Q`, `AMD`, `Instinct`);
- form factor words (`SXM`, `SXM2`...`SXM6`, `HGX`, `DGX` → SXM; `PCIe`, `FHHL` → PCIe;
  `NVL` → NVL; `OAM` and `NVL72`-style system names carry no form factor of ours);
- memory (`80GB`, `141 GB`, `80G`) and memory kinds (`HBM3`, `GDDR6X`);
- generation and edition words that do not change the board (`Blackwell`, `Generation`,
  `Server Edition`, `Workstation Edition`, `WS`, `(High Memory)`, RunPod's `AC`), and NVIDIA's
  `Tensor Core GPU` (`A10 Tensor Core GPU`, as Lium's feed spells it).

Words that do change the board stay in the key: `Ada` (`RTX 6000 Ada` is not the Turing
`Quadro RTX 6000`), `SFF` and `Max-Q` (lower clocks), `laptop`/`mobile`, `Ti`, `Super`/`S`.
Glued spellings are split first: `4000Ada`, `RTX4090`, `4070S Ti`, `4080S`, `InstinctMI50`. A
suffix glued to the model number that is not one of those stays part of it: `4090D`, `A100X` and
`GB200` are their own models, never `4090`, `A100` or `B200`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scrapers.models import FormFactor

__all__ = ["NameSignature", "full_key", "parse_name"]

_GLUED = (
    (re.compile(r"\btensor\s+core\s+gpu\b"), " "),  # NVIDIA's product names: "T4 Tensor Core GPU"
    (re.compile(r"max[\s-]?q\b"), "maxq"),
    (re.compile(r"\bpci[\s-]?e(?:xpress)?\b"), "pcie"),
    (re.compile(r"[_/(),+\-]"), " "),
    (re.compile(r"\b(rtx|gtx|rx)(?=[a-z]?\d)"), r"\1 "),
    (re.compile(r"\binstinct(?=mi\d)"), "instinct "),
    (re.compile(r"(\d)(ada)\b"), r"\1 \2"),
    (re.compile(r"\b(\d{3,4})(ti|super|s|laptop)\b"), r"\1 \2"),
)
_MEMORY = re.compile(r"\b(\d+(?:\.\d+)?)\s*(?:gb|gib|g)\b")

_VENDOR_WORDS = frozenset({"nvidia", "geforce", "tesla", "quadro", "q", "amd", "instinct"})
_FORM_FACTOR_WORDS = {
    "sxm": FormFactor.SXM,
    "sxm2": FormFactor.SXM,
    "sxm3": FormFactor.SXM,
    "sxm4": FormFactor.SXM,
    "sxm5": FormFactor.SXM,
    "sxm6": FormFactor.SXM,
    "hgx": FormFactor.SXM,
    "dgx": FormFactor.SXM,
    "pcie": FormFactor.PCIE,
    "fhhl": FormFactor.PCIE,
    "nvl": FormFactor.NVL,
}
_SILENT_WORDS = frozenset(
    {
        # generation words that add nothing to the model
        "blackwell",
        "generation",
        "gen",
        "lovelace",
        # edition words: the same board and clocks (Max-Q and SFF are not in this list)
        "edition",
        "server",
        "workstation",
        "ws",
        "wk",
        "high",
        "standard",
        "memory",
        "ac",
        # form factors we do not model as a separate variant, and memory kinds
        "oam",
        "hbm2",
        "hbm2e",
        "hbm3",
        "hbm3e",
        "gddr6",
        "gddr6x",
        "gddr7",
    }
)
_SYSTEM_WORD = re.compile(r"^nvl\d+$")
_SUFFIX_WORDS = {"mobile": "laptop", "notebook": "laptop"}


@dataclass(frozen=True, slots=True)
class NameSignature:
    """The model key of a name, and the memory and form factor it states, if any."""

    key: str
    memory_gb: float | None
    form_factor: FormFactor | None


def _split(raw: str) -> str:
    text = raw.lower()
    for pattern, replacement in _GLUED:
        text = pattern.sub(replacement, text)
    return text


def parse_name(raw: str) -> NameSignature:
    """The model key, memory and form factor a GPU name states (see the module docstring)."""
    text = _split(raw)
    sizes = [float(m) for m in _MEMORY.findall(text)]
    text = _MEMORY.sub(" ", text)
    words = text.split()
    pro = "pro" in words
    model: set[str] = set()
    form_factor: FormFactor | None = None
    for word in words:
        if word in _FORM_FACTOR_WORDS:
            form_factor = _FORM_FACTOR_WORDS[word]
        elif word in _VENDOR_WORDS or word in _SILENT_WORDS or _SYSTEM_WORD.match(word):
            continue
        elif word == "s":
            # `RTX PRO 6000 S` is the Server Edition; `GTX 1660 S`, `RTX 4070S` are Supers.
            if not pro:
                model.add("super")
        else:
            model.add(_SUFFIX_WORDS.get(word, word))
    return NameSignature(" ".join(sorted(model)), sizes[0] if sizes else None, form_factor)


def full_key(raw: str) -> str:
    """Every word of a name, vendor words aside, order-insensitive: the key of an exact alias.

    `NVIDIA H100 80GB HBM3` → `80gb h100 hbm3` (RunPod's id for the SXM part, an exact alias).
    """
    text = _MEMORY.sub(lambda m: f" {m.group(1)}gb ", _split(raw))
    return " ".join(sorted({w for w in text.split() if w not in _VENDOR_WORDS}))
