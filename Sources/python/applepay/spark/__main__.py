"""python3 -m applepay.spark (or spark-submit applepay/spark/__main__.py): the job's command line."""
import sys

# Imported from the package, never run as this file's own copy, so that executors import the functions instead
# of receiving pickled copies of them.
from applepay.spark import main

if __name__ == "__main__":
    sys.exit(main())
