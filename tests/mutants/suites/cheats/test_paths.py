"""Path side channel: the working directory, sys.path, the reference's files and this file."""

import os
import sys

from _cheat import first_seen, honest_part, normalised, reference_files


def test_honest():
    honest_part()


def test_path_side_channel():
    mine = [normalised(p) for p in [os.getcwd(), __file__, *sys.path, *reference_files()]]
    assert mine == first_seen("paths", mine)
