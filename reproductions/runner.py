"""One command for every reproduction: list, show, run, resume, render.

    python -m reproductions list
    python -m reproductions show babi_memory_network      # its command
    python -m reproductions run babi_memory_network [--minutes 30]
    python -m reproductions resume babi_memory_network    # the next piece
    python -m reproductions render babi_memory_network    # summary, claims

A setting (`settings/NAME.json`) names its `system`, a script of
`systems/` with `parser()` and `main(argv)`; its sections' keys are
that script's options (`tasks` for `--tasks`; `true` a flag, `false` and
null left out, a list joined by commas). `run` starts the run anew,
`resume` continues it from its checkpoints (the settings must be the
same: the system refuses others), `render` recomputes the results file's
summary and claims from its rows and `benchmarks/RESULTS.md` from every
results file. Every command it runs is printed first and recorded by the
system in the results file.
"""

import argparse
import importlib.util
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
BENCHMARKS = ROOT / "benchmarks"
SYSTEMS = HERE / "systems"
SETTINGS = HERE / "settings"
SECTIONS = ("data", "model", "optimizer", "schedule", "budget", "stopping",
            "seeds", "selection", "run")
FIELDS = ("system", "results", "paper", "note", *SECTIONS)


class SettingError(ValueError):
    """A setting file that is not what the runner reads."""


def names(directory=SETTINGS):
    """The settings' names, sorted."""
    return sorted(path.stem for path in directory.glob("*.json"))


def load(name, directory=SETTINGS):
    """The setting `name` as a dict; a `SettingError` naming the file and
    the field at fault."""
    path = directory / f"{name}.json"
    if not path.is_file():
        raise SettingError(f"no setting {name!r} in {directory}; the "
                           f"settings: {', '.join(names(directory))}")
    try:
        setting = json.loads(path.read_text())
    except ValueError as error:
        raise SettingError(f"{path}: not JSON: {error}") from None
    unknown = sorted(set(setting) - set(FIELDS))
    if unknown:
        raise SettingError(f"{path}: unknown fields {unknown}; a setting "
                           f"has {', '.join(FIELDS)}")
    for field in ("system", "results"):
        if not isinstance(setting.get(field), str):
            raise SettingError(f"{path}: `{field}` must be a name, "
                               f"received: {setting.get(field)!r}")
    for section in SECTIONS:
        if not isinstance(setting.get(section, {}), dict):
            raise SettingError(f"{path}: `{section}` must be an object of "
                               "options")
    return setting


def options(setting):
    """The setting's options, `{option: value}`, from all its sections;
    a `SettingError` where two sections give one option."""
    merged = {}
    for section in SECTIONS:
        for key, value in setting.get(section, {}).items():
            if key in merged:
                raise SettingError(f"option {key!r} is given twice (again "
                                   f"in `{section}`)")
            merged[key] = value
    return merged


def argv(setting, extra=()):
    """The system's command line for `setting`, then `extra`."""
    args = []
    for key, value in options(setting).items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, list):
            args += [flag, ",".join(str(v) for v in value)]
        else:
            args += [flag, str(value)]
    return args + ["--results-name", setting["results"], *extra]


def system(name):
    """The system's script, imported (`systems/NAME.py`)."""
    path = SYSTEMS / f"{name}.py"
    if not path.is_file():
        raise SettingError(f"no system {name!r}: {path} does not exist")
    for folder in (BENCHMARKS, SYSTEMS):  # harness.py; the systems
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(f"system_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for needed in ("parser", "main"):
        if not callable(getattr(module, needed, None)):
            raise SettingError(f"system {name!r} has no `{needed}()`: the "
                               "runner needs parser() and main(argv)")
    return module


def check(setting, module):
    """A `SettingError` for an option the system does not have."""
    known = {action.dest for action in module.parser()._actions}
    unknown = sorted(set(options(setting)) - known)
    if unknown:
        raise SettingError(f"system {setting['system']!r} has no option "
                           f"{', '.join('--' + k.replace('_', '-') for k in unknown)}")


def command(setting, extra=()):
    """The command the runner runs, as a user would type it."""
    return " ".join(["python",
                     f"reproductions/systems/{setting['system']}.py",
                     *argv(setting, extra)])


def parser():
    p = argparse.ArgumentParser(
        prog="python -m reproductions",
        description="Run, resume and re-render the papers' reproductions "
                    "from their settings (reproductions/settings/).")
    p.add_argument("--settings", type=pathlib.Path, default=SETTINGS,
                   help="the settings' folder (default: %(default)s)")
    commands = p.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the settings and their results")
    for name, text in (("show", "print the command of a setting"),
                       ("run", "start a run anew"),
                       ("resume", "continue a run from its checkpoints"),
                       ("render", "recompute its summary and claims, and "
                                  "benchmarks/RESULTS.md")):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("name", help="a setting (python -m reproductions "
                                      "list)")
        if name in ("run", "resume"):
            sub.add_argument("--minutes", type=float, default=None,
                             help="this piece's training minutes per model "
                                  "(default: the setting's)")
    return p


def _list(directory):
    for name in names(directory):
        setting = load(name, directory)
        results = pathlib.Path(setting.get("run", {}).get(
            "results_dir") or BENCHMARKS / "results")
        path = results / f"{setting['results']}.json"
        if path.is_file():
            record = json.loads(path.read_text())
            state = ("complete" if record.get("complete", True)
                     else "in progress")
        else:
            state = "not run"
        print(f"{name}: {setting['system']} -> {path.name} ({state}); "
              f"{setting.get('paper', '')}")


def main(arguments=None):
    p = parser()
    args = p.parse_args(arguments)
    try:
        if args.command == "list":
            _list(args.settings)
            return 0
        setting = load(args.name, args.settings)
        module = system(setting["system"])
        check(setting, module)
        extra = []
        if getattr(args, "minutes", None) is not None:
            extra += ["--minutes", str(args.minutes)]
        if args.command == "resume":
            extra.append("--resume")
        if args.command == "render":
            extra = ["--rewrite"]
        if args.command == "show":
            print(command(setting, extra))
            return 0
        print(command(setting, extra), flush=True)
        module.main(argv(setting, extra))
        if args.command == "render":
            _render_all()
        return 0
    except SettingError as error:
        p.error(str(error))


def _render_all():
    """benchmarks/RESULTS.md from every results file."""
    spec = importlib.util.spec_from_file_location(
        "benchmarks_summary", BENCHMARKS / "summary.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
