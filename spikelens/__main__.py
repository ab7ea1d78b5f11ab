from .allocator import return_freed_pages
from .interrupts import install

install()  # before the CLI's heavy imports: an early Ctrl-C exits 130 with one line
return_freed_pages()  # before Polars loads (allocator)

from .cli import main  # noqa: E402

main(exit_fast=True)  # the program: ends without the interpreter's teardown (cli._finish)
