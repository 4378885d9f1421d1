#!/usr/bin/env python3
"""Write the public data sets of the FM and EFPSN experiments as CSV files into data/.

The data come from the files that scikit-learn ships inside its package (load_diabetes,
load_breast_cancer and load_digits read them from disk; nothing is downloaded). Each CSV starts with `#` comment
lines naming the source and licence, then a header row; the target column is `target`. A sidecar
JSON file next to it records the same facts and the columns for tools.

    tools/venv/bin/python scripts/fetch_datasets.py [--out data] [--force]

Idempotent: a data set whose CSV and JSON already exist is skipped unless --force is given.
"""

import argparse
import hashlib
import json
import sys
from pathlib import Path

import sklearn
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits


def clean(name: str) -> str:
    """Column names without spaces, so they are easy to use in a bounds file or on a shell."""
    return str(name).strip().replace(" ", "_")


DATASETS = {
    "diabetes": {
        "load": lambda: load_diabetes(scaled=False),
        "task": "regression",
        "title": "Diabetes (Efron, Hastie, Johnstone & Tibshirani 2004, 'Least Angle Regression')",
        "source": "https://www4.stat.ncsu.edu/~boos/var.select/diabetes.html",
        "licence": (
            "redistributed in scikit-learn (BSD-3-Clause); the original page states no separate "
            "licence"
        ),
        "target": "quantitative measure of disease progression one year after baseline (25-346)",
        "notes": "raw (unscaled) values: age in years, sex coded 1/2, bmi, bp, six serum measurements",
    },
    "breast_cancer": {
        "load": load_breast_cancer,
        "task": "binary classification",
        "title": "Breast Cancer Wisconsin (Diagnostic), Street, Wolberg & Mangasarian 1993",
        "source": "https://archive.ics.uci.edu/dataset/17/breast+cancer+wisconsin+diagnostic",
        "licence": "CC BY 4.0 (UCI Machine Learning Repository); redistributed in scikit-learn (BSD-3-Clause)",
        "target": "0 = malignant, 1 = benign",
        "notes": "30 features computed from digitised images of fine needle aspirates",
    },
    "digits": {
        "load": load_digits,
        "task": "classification (10 classes)",
        "title": "Optical Recognition of Handwritten Digits (Alpaydin & Kaynak 1998), the 8x8 test set",
        "source": "https://archive.ics.uci.edu/dataset/80/optical+recognition+of+handwritten+digits",
        "licence": "CC BY 4.0 (UCI Machine Learning Repository); redistributed in scikit-learn (BSD-3-Clause)",
        "target": "the digit, 0-9",
        "notes": "64 pixel counts (0-16) of an 8x8 image, row by row; EFPSN's stand-in for MNIST",
    },
}


def write(name: str, spec: dict, out: Path, force: bool) -> None:
    csv_path, json_path = out / f"{name}.csv", out / f"{name}.json"
    if csv_path.exists() and json_path.exists() and not force:
        print(f"{csv_path}: present, skipped")
        return
    bunch = spec["load"]()
    columns = [clean(c) for c in bunch.feature_names] + ["target"]
    header = [
        f"# {spec['title']}",
        f"# source: {spec['source']}",
        f"# licence: {spec['licence']}",
        f"# obtained from: scikit-learn {sklearn.__version__} (files inside the installed package)",
        f"# target: {spec['target']}",
        f"# {spec['notes']}",
    ]
    lines = header + [",".join(columns)]
    for row, y in zip(bunch.data, bunch.target):
        lines.append(",".join(repr(float(v)) for v in row) + "," + repr(float(y)))
    text = "\n".join(lines) + "\n"
    csv_path.write_text(text)
    meta = {
        "name": name,
        "task": spec["task"],
        "title": spec["title"],
        "source": spec["source"],
        "licence": spec["licence"],
        "obtained_from": f"scikit-learn {sklearn.__version__}",
        "rows": int(bunch.data.shape[0]),
        "features": columns[:-1],
        "target": {"column": "target", "meaning": spec["target"]},
        "notes": spec["notes"],
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
    }
    json_path.write_text(json.dumps(meta, indent=2) + "\n")
    print(f"{csv_path}: {meta['rows']} rows, {len(columns) - 1} features")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "data")
    parser.add_argument("--force", action="store_true", help="rewrite existing files")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, spec in DATASETS.items():
        write(name, spec, args.out, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
