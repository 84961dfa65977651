"""Runs the Python wire suite and ends with the plain 'N passed, N failed'
line; exits non-zero on any failure or if no test ran."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# Func's Python API, from the source tree (python/).
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py")
result = unittest.TextTestRunner(verbosity=2).run(suite)
failed = len(result.failures) + len(result.errors)
passed = result.testsRun - failed - len(result.skipped)
print("python: %d passed, %d failed" % (passed, failed))
sys.exit(0 if failed == 0 and result.testsRun > 0 else 1)
