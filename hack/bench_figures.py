"""What the chart scripts share: the JSON figures a benchmark prints, one object per line mixed
with its text lines, read back by kind."""
import json


def points(paths, kind, key):
    """The figures named `kind` in the files `paths`, one per value of `key` (a later one of the
    same value wins: a rerun of a size replaces it), sorted by that value."""
    found = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    figure = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if figure.get("figure") == kind:
                    found[figure[key]] = figure
    return [found[k] for k in sorted(found)]
