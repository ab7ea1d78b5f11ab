from .interrupts import install

install()  # before the CLI's heavy imports: an early Ctrl-C exits 130 with one line

from .cli import main  # noqa: E402

main()
