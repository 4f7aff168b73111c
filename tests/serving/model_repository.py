"""The model folder the serving tests run against, for our server and for
a real TF Serving:

    ROOT/numeric/1, ROOT/numeric/2   the numeric model (tests/serving/
                                     numeric_model.py), two versions
    ROOT/translator/1                a tiny Transformer translator,
                                     briefly trained (tests/
                                     trained_translators.py)
    ROOT/rnn_translator/1            a tiny RNN translator (additive
                                     attention), briefly trained
    ROOT/models.config               the three models; numeric serves all
                                     versions, labels stable=1, canary=2
    ROOT/translations.json           the in-process translations of
                                     TEXTS as trained, for comparison
                                     over REST (and ROOT/
                                     rnn_translator_translations.json)

To check a real TF Serving: `python -m tests.serving.model_repository
DIR --config-base /models`, start tensorflow_model_server with DIR
mounted at /models and `--model_config_file=/models/models.config
--allow_version_labels_for_unavailable_models`, then run the tests with
TF_SERVING_URL=http://localhost:8501 TF_SERVING_MODEL_DIR=DIR.
"""

import argparse
import json
import pathlib
import shutil

TEXTS = [
    "the man sees the dog .",
    "",
    "a woman is reading a book in the garden .",
    "Ünïcödé, émigré — naïve façade 日本語 ✓",
    " ".join(["the big red dog runs to the old house ."] * 40),
]

# Served name -> the variant of tests/trained_translators.py it is, and the
# file of its in-process translations.
TRANSLATORS = {"translator": "sinusoidal", "rnn_translator": "rnn"}
TRANSLATIONS = {"translator": "translations.json",
                "rnn_translator": "rnn_translator_translations.json"}

CONFIG = """model_config_list {{
  config {{
    name: "numeric"
    base_path: "{base}/numeric"
    model_platform: "tensorflow"
    model_version_policy {{ all {{}} }}
    version_labels {{ key: "stable" value: 1 }}
    version_labels {{ key: "canary" value: 2 }}
  }}
  config {{
    name: "translator"
    base_path: "{base}/translator"
    model_platform: "tensorflow"
  }}
  config {{
    name: "rnn_translator"
    base_path: "{base}/rnn_translator"
    model_platform: "tensorflow"
  }}
}}
"""


def build(root, config_base=None, translator_work_dir=None, trained=None):
    """Write the repository under `root`; returns `root` as a Path.

    `trained` maps served names to the run folders of translators already
    trained by `tests.trained_translators` (the test suite's, shared with
    the decoding and export tests); the others are trained here, under
    `translator_work_dir`."""
    from tests.serving.numeric_model import export_numeric_model
    from tests.trained_translators import recorded_translations
    from tests.trained_translators import served_export
    from tests.trained_translators import train_translator

    root = pathlib.Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for version in (1, 2):
        export_numeric_model(root / "numeric", version)
    work = pathlib.Path(translator_work_dir or root / "_translator_run")
    trained = dict(trained or {})
    for name, variant in TRANSLATORS.items():
        if name not in trained:
            train_translator(work / name, variant)
            trained[name] = work / name
    for name in TRANSLATORS:
        # Exported by the process that trained it.
        shutil.copytree(served_export(trained[name], name), root / name / "1")
        recorded = recorded_translations(trained[name])
        (root / TRANSLATIONS[name]).write_text(json.dumps(
            {text: recorded[text] for text in TEXTS}, ensure_ascii=False))
    (root / "models.config").write_text(
        CONFIG.format(base=config_base or root.resolve()))
    return root


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", help="folder to write")
    parser.add_argument("--config-base", default=None,
                        help="the folder as the server sees it (e.g. /models "
                             "inside a container); default: ROOT")
    args = parser.parse_args()
    build(args.root, args.config_base, f"{args.root}/../translator-run")
    print(f"wrote {args.root}")


if __name__ == "__main__":
    main()
