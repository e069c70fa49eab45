import sys

from .cli import main

if __name__ == "__main__":      # `python -m proposalkit`; importing the module runs nothing
    sys.exit(main())
