"""One command for every reproduction: list, show, run, resume, merge,
render.

    python -m reproductions list
    python -m reproductions show babi_memory_network      # its command
    python -m reproductions run babi_memory_network [--minutes 30]
    python -m reproductions resume babi_memory_network    # the next piece
    python -m reproductions merge babi_memory_network seed5.json ...
    python -m reproductions render babi_memory_network    # its summary

A setting (`settings/NAME.json`) names its `system`, a script of
`systems/` with `parser()`, `main(argv)` and `summary(rows)` (and, where
a results file holds more figures computed from its rows,
`derived(rows)`); its sections' keys are that script's options (`tasks`
for `--tasks`; `true` a flag, `false` and null left out, a list joined
by commas). `run` starts the run anew and `resume` continues it from its
checkpoints; the results file records the setting, and `resume` refuses
a setting that differs from it but for where files go and the minutes
of a piece (`WHERE`). `merge` adds the finished runs (rows) and commands
of other results files of the same setting but for its seeds (seeds run
apart, on other machines). `render` recomputes the results file's
summary from its finished runs (the scoreboard judges the claims from
its rows), and `benchmarks/RESULTS.md` from every results file. Every
command it runs is printed first and recorded in the results file.
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
# A row's identity: two rows that agree on these are one run.
ROW_KEY = ("model", "variant", "size", "setting", "task", "tasks", "seed",
           "location_std", "first_glimpse")
# The options that say only where files go, how long a piece is or how it
# is shown: settings that differ in them are one setting.
WHERE = ("results_dir", "minutes", "checkpoint_dir", "logs", "save_dir",
         "output_dir", "verbose", "parallel", "cache_dir", "figures",
         "plot", "plot_task")
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
    for needed in ("parser", "main", "summary"):
        if not callable(getattr(module, needed, None)):
            raise SettingError(f"system {name!r} has no `{needed}()`: the "
                               "runner needs parser(), main(argv) and "
                               "summary(rows)")
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
                       ("merge", "add the runs of other results files of "
                                 "the setting"),
                       ("render", "recompute its summary from its rows, "
                                  "and benchmarks/RESULTS.md")):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("name", help="a setting (python -m reproductions "
                                      "list)")
        if name in ("run", "resume"):
            sub.add_argument("--minutes", type=float, default=None,
                             help="this piece's training minutes per model "
                                  "(default: the setting's)")
        if name == "merge":
            sub.add_argument("files", nargs="+", type=pathlib.Path,
                             metavar="FILE", help="results files written "
                             "by this setting's runs")
    return p


def _list(directory):
    for name in names(directory):
        setting = load(name, directory)
        path = results_path(setting)
        if path.is_file():
            record = json.loads(path.read_text())
            finished = [row.get("finished", True)
                        for row in record.get("rows", [])]
            state = ("complete" if record.get("complete", True) else
                     f"in progress: {sum(finished)} run(s) finished, "
                     f"{finished.count(False)} stopped")
            if record.get("off_scoreboard"):
                state += "; off the scoreboard"
        else:
            state = "not run"
        print(f"{name}: {setting['system']} -> {path.name} ({state}); "
              f"{setting.get('paper', '')}")


def results_path(setting):
    """The setting's results file (its `run` section's `results_dir`, by
    default benchmarks/results/)."""
    folder = setting.get("run", {}).get("results_dir")
    return pathlib.Path(folder or BENCHMARKS / "results") / (
        f"{setting['results']}.json")


def differences(mine, theirs, skip=()):
    """The options (`--name value`) in which two settings differ, as the
    system is given them (false, null and absent alike; a list as its
    commas), in all their sections but `skip`, and but the options that
    only say where files go or how long a piece is (`WHERE`)."""
    def flat(setting):
        return {key: _given(value) for section in SECTIONS
                if section not in skip
                for key, value in (setting.get(section) or {}).items()
                if key not in WHERE and _given(value) is not None}

    a, b = flat(mine), flat(theirs)
    return [f"--{key.replace('_', '-')} {b.get(key)} there, "
            f"{a.get(key)} here" for key in sorted(set(a) | set(b))
            if a.get(key) != b.get(key)]


def _given(value):
    """An option's value as its command line gives it (None: left out)."""
    if value is False or value is None:
        return None
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return "true" if value is True else str(value)


def _read(path):
    try:
        return json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError) as error:
        raise SettingError(f"cannot read {path}: {error}") from None


def rerender(setting, module):
    """Recompute the results file's summary from its finished runs (and
    the system's `derived` figures); a stale `claims` goes (the
    scoreboard judges claims from the rows). Returns the record."""
    import harness  # benchmarks/, on the path once `system()` ran

    path = results_path(setting)
    if not path.is_file():
        raise SettingError(f"render needs a results file, none at {path}")
    record = _results(path)
    finished = [row for row in record["rows"] if row.get("finished", True)]
    record["summary"] = module.summary(finished)
    derived = getattr(module, "derived", None)
    for key, value in (derived(finished) if derived else {}).items():
        if value:
            record[key] = value
        else:
            record.pop(key, None)
    record.pop("claims", None)
    path.write_text(harness.dumps(record))
    print(f"rewrote {path}")
    return record


def merge(setting, module, files):
    """Add the finished runs (rows) and commands of `files` (results files
    of this setting, but for its seeds) to the setting's results file
    (of this setting too), then `rerender` it; a file of another
    setting, an unfinished run, or one that repeats a run, is a
    `SettingError`."""
    path = results_path(setting)
    if not path.is_file():
        raise SettingError(f"merge needs a results file to merge into, "
                           f"none at {path}")
    _resumable(setting, "merge")
    record = _results(path)

    def key(row):
        return json.dumps({k: row[k] for k in ROW_KEY if k in row})

    seen = {key(row) for row in record["rows"]}
    commands = _commands(record)
    for name in files:
        other = _results(name)
        if not isinstance(other.get("setting"), dict):
            raise SettingError(f"merge: {name} records no setting (the "
                               "files that `run` and `resume` write do)")
        differ = differences(setting, other["setting"], skip=("seeds",))
        if differ:
            raise SettingError(f"merge: {name} differs from the setting "
                               f"{setting['name']!r} in: "
                               + ", ".join(differ))
        if not other["rows"]:
            raise SettingError(f"merge: {name} has no run (rows)")
        for row in other["rows"]:
            if not row.get("finished", True):
                raise SettingError(f"merge: {name} holds a run not finished "
                                   f"({key(row)}): resume it first")
            if key(row) in seen:
                raise SettingError(f"merge: {name} repeats the run "
                                   f"{key(row)}")
            seen.add(key(row))
            record["rows"].append(row)
        commands += _commands(other)
    record["commands"] = commands
    record.setdefault("setting", setting)
    import harness  # benchmarks/, on the path once `system()` ran

    path.write_text(harness.dumps(record))
    return rerender(setting, module)


def _results(path):
    """A results file as a dict with its `rows` (dicts); a `SettingError`
    for anything else."""
    record = _read(path)
    rows = record.get("rows") if isinstance(record, dict) else None
    if not isinstance(rows, list) or not all(isinstance(row, dict)
                                             for row in rows):
        raise SettingError(f"{path}: not a results file (a JSON object "
                           "whose `rows` are objects)")
    return record


def _commands(record):
    """The commands a results file records."""
    return list(record.get("commands") or [record.get("command", "")])


def _resumable(setting, command="resume"):
    """A `SettingError` where the results file records another setting
    (but for where files go and the minutes of a piece)."""
    path = results_path(setting)
    if path.is_file():
        record = _read(path)
        earlier = record.get("setting") if isinstance(record, dict) else None
        differ = isinstance(earlier, dict) and differences(setting, earlier)
        if differ:
            raise SettingError(f"{command} goes on with the file's own "
                               f"setting; {path} differs in: "
                               + ", ".join(differ))


def main(arguments=None):
    p = parser()
    args = p.parse_args(arguments)
    try:
        if args.command == "list":
            _list(args.settings)
            return 0
        setting = dict(load(args.name, args.settings), name=args.name)
        module = system(setting["system"])
        check(setting, module)
        if args.command == "merge":
            merge(setting, module, args.files)
        elif args.command == "render":
            rerender(setting, module)
        else:
            extra = []
            if getattr(args, "minutes", None) is not None:
                extra += ["--minutes", str(args.minutes)]
            if args.command == "resume":
                _resumable(setting)
                extra.append("--resume")
            known = {option for action in module.parser()._actions
                     for option in action.option_strings}
            missing = [flag for flag in extra if flag.startswith("--")
                       and flag not in known]
            if missing:
                raise SettingError(
                    f"system {setting['system']!r} has no "
                    f"{', '.join(missing)}: its runs go in one piece "
                    "(`run` runs them anew)")
            if args.command == "show":
                print(command(setting, extra))
                return 0
            print(command(setting, extra), flush=True)
            import harness

            harness.SETTING = setting
            try:
                module.main(argv(setting, extra))
            finally:
                harness.SETTING = None
        if args.command in ("merge", "render") and results_path(
                setting).parent.resolve() == (BENCHMARKS / "results").resolve():
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
