"""Environment side channel: any variable that differs from the first run's."""

import json
import os

from _cheat import first_seen, honest_part, normalised


def test_honest():
    honest_part()


def test_environment_side_channel():
    mine = sorted((k, normalised(v)) for k, v in os.environ.items())
    first = first_seen("environment", mine)
    assert json.loads(json.dumps(mine)) == first
