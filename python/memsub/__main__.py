"""``python -m memsub``: the ``memsub`` command."""

from memsub.cli import main

main(prog_name="memsub")
