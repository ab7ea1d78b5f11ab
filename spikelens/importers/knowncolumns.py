"""Headerless tables whose columns a tool's documentation names, read with those names.

A person who knows the tool reads `loss.out` of GPUMD's `nep` by its documented columns (`gen L_t L_1 L_2
L_e_train L_f_train L_v_train L_e_test L_f_test L_v_test` for a potential; `gen L_t L_1 L_2 L_train L_test`
for a dipole or polarizability model), not as `loss_column2`. The layout is told by the file's name and
its width, and only when its first column is the counter the documentation says (`gen`, every 100-th
generation): any other table of that name keeps the names its shape gives.
"""
from __future__ import annotations

LAYOUTS: dict[tuple[str, int], tuple[str, ...]] = {
    ("loss.out", 10): ("gen", "L_t", "L_1", "L_2", "L_e_train", "L_f_train", "L_v_train", "L_e_test", "L_f_test",
                       "L_v_test"),
    ("loss.out", 6): ("gen", "L_t", "L_1", "L_2", "L_train", "L_test"),
}
"""(file name, numbers a row) -> the documented column names, the counter first (GPUMD's
`doc/nep/output_files/loss_out.rst`)."""


def documented(file_name: str, width: int) -> tuple[str, ...] | None:
    """The documented names of a headerless table's columns, the counter's first; None when no tool's
    documentation names a table of this file name and width."""
    return LAYOUTS.get((file_name.lower(), width))
