"""``python -m memsub``: the ``memsub`` command, for environments where the console script is not on PATH."""

from memsub.cli import main

main(prog_name="memsub")
