"""A third party's contract pack, installed for real: a distribution written into a directory.

`install_pack_distribution(folder, ...)` writes a module and its `.dist-info` (METADATA, an
`entry_points.txt` registering the pack under `healjson.contracts`, RECORD): the layout pip
leaves in site-packages. With `folder` on `sys.path`, `importlib.metadata` finds the
distribution and its entry points, so `healjson.load_contracts(name)` and `healjson packs` see
the pack exactly as they see one installed from PyPI — no pip, no network.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

__all__ = ["BOX_PACK_SOURCE", "install_pack_distribution"]

# `golden` is the first golden example: `{"low": 5, "high": 1}` breaks the pack's own rule, so
# `check_pack` must report the pack as broken.
BOX_PACK_SOURCE = textwrap.dedent(
    """
    from pydantic import BaseModel

    from healjson import ContractPack, Violation, contract


    class Box(BaseModel):
        low: int
        high: int


    @contract(fields=("low", "high"))
    def ordered(box: Box) -> Violation | None:
        \"\"\"`low` does not exceed `high`.\"\"\"
        if box.low > box.high:
            return Violation(
                "low must not exceed high",
                prescription="Make `low` at most `high`; either field may change.",
            )
        return None


    def make_pack() -> ContractPack:
        return ContractPack(
            Box, (ordered,), ({GOLDEN},), name="boxes", description="Boxes with ordered bounds."
        )
    """
)


def install_pack_distribution(
    folder: Path,
    *,
    distribution: str = "acme_boxes",
    pack_name: str = "boxes",
    golden: str = '{"low": 1, "high": 2}',
) -> Path:
    """Write the module `<distribution>` and its `.dist-info` into `folder`; the pack registers
    as `pack_name` (an entry point naming a function that returns the pack). Returns `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    module = folder / f"{distribution}.py"
    module.write_text(BOX_PACK_SOURCE.replace("{GOLDEN}", golden), encoding="utf-8")
    info = folder / f"{distribution}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\nRequires-Dist: healjson\n",
        encoding="utf-8",
    )
    (info / "entry_points.txt").write_text(
        f"[healjson.contracts]\n{pack_name} = {distribution}:make_pack\n", encoding="utf-8"
    )
    (info / "RECORD").write_text(
        f"{distribution}.py,,\n{info.name}/METADATA,,\n{info.name}/entry_points.txt,,\n"
        f"{info.name}/RECORD,,\n",
        encoding="utf-8",
    )
    return folder
