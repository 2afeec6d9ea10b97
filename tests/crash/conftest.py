"""The crash harness's modules (workload, oracle, trial) import each other
by name: put this folder on the path."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
