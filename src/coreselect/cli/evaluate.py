"""``coreselect evaluate``: cross-validated comparison of feature selectors (paper, Section 5)."""

from __future__ import annotations

import click

from click.core import ParameterSource

from coreselect.cli._common import (
    LABELS_HELP, data_format, expert_option, fail, handle_errors, header_flag, header_option,
    help_all_option, labels_as_features_option, load_options, log_to_stderr, quiet_option,
    reporter, verbose_option,
)
from coreselect.selection.spec import evaluate_unused_reason, max_workers

_DEFAULT_METHODS = "gds,cgds,dgds,br-ig,br-rf,lp-ig,lp-rf,br-chi2"
_DEFAULT_K = "10:100:10"


def _load(data: str, labels: str | None, labels_as_features: bool = False,
          header: bool | None = None):
    import coreselect

    return coreselect.load(data, **load_options(labels, labels_as_features, header))


@click.command("evaluate")
@click.argument("data")
@click.option("--methods", default=_DEFAULT_METHODS, show_default=True,
              help="Comma-separated: gds (the library's default calibration), cgds / dgds (the paper's "
                   "objective, centralized / distributed), gds-CALIBRATION, gds-tuned (the training fold chooses the "
                   "objective's form among stated candidates: coreselect.tuning), br-ig, lp-ig, br-rf, lp-rf, "
                   "br-chi2, max-chi2, random; the published MI selectors pmu, mdmr, d2f, scls, lrfs, lsmfs, "
                   "mlsmfs, ppt-mi, igmf, atr; the embedded l1 (L1 logistic regression) and trees "
                   "(extra-trees importances); all (the evaluator on every feature: the reference each "
                   "selection's score and training time is read against; left out, with a note, when its "
                   "estimated memory exceeds half the free memory).")
@click.option("--k", "k_spec", default=None,
              help=f"Numbers of features: a list '10,20,50' or a range 'start:stop:step' (stop included), "
                   f"or 'auto': every method's k is chosen on each training fold (internal "
                   f"cross-validation of its ranking's prefixes, the rule of select -k auto, nested; "
                   f"results.csv's k_chosen; the full-feature reference all keeps every feature). "
                   f"[default: {_DEFAULT_K}, capped at the number of features]")
@click.option("--evaluator", type=click.Choice(["brknn", "linear", "sparse-knn"]), default="brknn",
              show_default=True,
              help="Classifier trained on the selected features: BRkNN-b (the paper's), "
                   "binary-relevance logistic regression, or sparse-knn (cosine 10-nearest-neighbour "
                   "scorer, sparse throughout: for 10^4-10^5 labels).")
@click.option("--measures", default="classic", show_default=True,
              help="Comma-separated: 'classic' (the paper's five), subset_accuracy, example_accuracy, "
                   "example_f1, micro_f1, macro_f1, and the ranking measures on scores p@K, ndcg@K, "
                   "psp@K, psndcg@K (K in 1..5; 'p@1..5' for a range; 'ranking' for all 20).")
@click.option("--folds", default=10, show_default=True, type=int, help="Cross-validation folds.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1),
              help="Seed of the fold split and the selectors.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Also write results.csv, summary.md and the PNG plots to this folder (the "
                   "tables are printed either way).")
@click.option("--test", "test_data", default=None, metavar="FILE",
              help="Score one given split instead of cross-validating: DATA is the training "
                   "set, FILE the test set (the same features and labels; read with the same "
                   "--labels).")
@click.option("--mulan-split", "mulan_split", is_flag=True,
              help="Score Mulan's own train/test split instead of cross-validating: a "
                   "dataset name's -train/-test files (emotions: emotions-train.arff, "
                   "emotions-test.arff), or those beside DATA's file.")
@click.option("--jobs", default=1, show_default=True, type=int,
              help=f"Worker processes (at most {max_workers()} here).")
@click.option("--lam", default=0.5, show_default=True, type=float,
              help="lambda (weight of diversity) of the GDS methods: gds, gds-CALIBRATION, cgds, dgds.")
@click.option("--lam-sweep", default=None,
              help="Instead of the comparison, sweep lambda for the GDS method(s) at the --k values: "
                   "'0,0.1,...,1', '0:1:0.1' or a list (the paper's Figure 4).")
@expert_option("--relevance", type=click.Choice(["mi", "nmi"]), default="mi", show_default=True,
               help="Relevance term of the GDS methods: gds, gds-CALIBRATION, cgds, dgds.")
@click.option("--labels", default=None, help=LABELS_HELP)
@labels_as_features_option
@header_option
@quiet_option
@verbose_option
@help_all_option
@handle_errors
def evaluate_cmd(data, methods, k_spec, evaluator, measures, folds, seed, out_dir, test_data,
                 mulan_split, jobs, lam, lam_sweep, relevance, labels, labels_as_features, quiet,
                 verbose, header):
    """Cross-validate feature selectors on DATA (a file or a built-in name), or score them
    on a given train/test split (--test, --mulan-split).

    Selection is fit on each training fold only; the evaluator (BRkNN-b with 5 neighbours,
    or BR logistic regression) is trained on the selected features and scored with five
    measures on the test fold. The tables go to stdout; --out also writes them to files.
    """
    import pandas as pd

    from coreselect.core.objective import DEFAULT_CALIBRATION
    from coreselect.errors import InputError
    from coreselect.evaluation.protocol import (
        GREEDY_METHODS,
        method_factories,
        parse_k,
        parse_values,
        run_lambda_sweep,
        run_protocol,
    )
    from coreselect.evaluation.measures import MEASURES
    from coreselect.evaluation.ranking import parse_measures
    from coreselect.evaluation.report import write_report

    if verbose:
        log_to_stderr()
    names = [m.strip().lower() for m in methods.split(",") if m.strip()]
    if not names:
        raise InputError("--methods is empty")
    if len(set(names)) != len(names):
        raise InputError("--methods names a method twice")
    # The option matrix of evaluate (coreselect.selection.spec.EVALUATE_UNUSED): one line for an option
    # given explicitly that this run would ignore.
    ctx = click.get_current_context()
    for name, flag in (("lam", "--lam"), ("relevance", "--relevance"),
                       ("header", header_flag(header))):
        if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None):
            why = evaluate_unused_reason(name, names, lam_sweep is not None,
                                         data_format(data) if name == "header" else None)
            if why is not None:
                fail(f"{flag} does not apply to this evaluate run: {why}")
    if test_data is not None and mulan_split:
        fail("--test and --mulan-split both name the test set: give one")
    split = (test_data is not None) or mulan_split
    if split and ctx.get_parameter_source("folds") not in (ParameterSource.DEFAULT, None):
        fail(f"--folds does not apply with {'--test' if test_data is not None else '--mulan-split'}: "
             "the given split is scored once")
    try:
        ks = parse_k(k_spec if k_spec is not None else _DEFAULT_K)
    except InputError as exc:
        fail(f"--k {k_spec}: {exc}")
    measure_names = parse_measures(measures, tuple(MEASURES))
    if not 1 <= jobs <= max_workers():
        raise InputError(f"--jobs must be an integer in [1, {max_workers()}] (at most the worker "
                         f"processes this machine can run), got {jobs}")
    if folds < 2:
        raise InputError("--folds must be at least 2")
    if not 0.0 <= lam <= 1.0:
        raise InputError("--lam must lie in [0, 1]")
    factories = method_factories(names, lam=lam, relevance=relevance)  # validates the names
    try:
        lams = parse_values(lam_sweep) if lam_sweep is not None else None
    except InputError as exc:
        fail(f"--lam-sweep {lam_sweep}: {exc}")
    if lams is not None and not all(0.0 <= v <= 1.0 for v in lams):
        fail(f"--lam-sweep {lam_sweep}: every lambda must lie in [0, 1]")
    if lams is not None and ks == ["auto"]:
        raise InputError("--lam-sweep scores fixed numbers of features: give --k a list, not auto")
    if lams is not None and not any(n in GREEDY_METHODS for n in names):
        raise InputError("--lam-sweep needs gds, cgds or dgds in --methods")
    # Outputs are checked before any work: never over an input (DATA as resolved, its label
    # XML), never a folder or read-only file; they are written together at the end.
    from coreselect.datasets.inputs import check_read_outputs, check_run_outputs
    from coreselect.evaluation.report import report_paths
    from coreselect.io.files import check_writable, checkpoint

    train_data, test_data = (_mulan_pair(data) if mulan_split else (data, test_data))
    planned = ([] if out_dir is None
               else report_paths(out_dir, sweep=lams is not None, measures=measure_names))
    outputs = {str(p): p for p in planned}
    for source in (train_data, test_data):
        if source is not None:
            check_run_outputs(source, labels, outputs)
    check_writable(planned)
    from pathlib import Path

    shown = reporter(quiet, {"loading": f"loading {Path(train_data).name}"
                                        + (f" and {Path(test_data).name}" if split else "")})
    given_folds = None
    with shown.stage("loading"):
        ds = _load(train_data, labels, labels_as_features, header)
        if split:
            ds, given_folds = _with_test_set(ds, _load(test_data, labels, labels_as_features, header),
                                             test_data)
    check_read_outputs(ds, outputs)
    if ks != ["auto"] and ks[-1] > ds.n_features:
        # Every k above the features there are is the whole set: one run at d, said once.
        ks = sorted({min(k, ds.n_features) for k in ks})
        click.echo(f"{ds.name} has {ds.n_features} features: k capped at {ds.n_features} "
                   f"(k = {','.join(map(str, ks))})", err=True)  # a warning: also with -q

    n_runs = 1 if lams is None else sum(n in GREEDY_METHODS for n in names)
    base = [0]  # cells finished by earlier runs (a sweep runs once per GDS method)
    stage = (f"evaluate {ds.name}, (method, k, fold) cells" if lams is None
             else f"evaluate {ds.name}, (lambda, k, fold) cells")

    def progress(done: int, total: int) -> None:
        checkpoint("progress")
        shown(stage, base[0] + done, total * n_runs)
        if done == total:
            base[0] += total

    try:
        if lams is None:
            df = run_protocol(ds.X, ds.Y, factories, ks, n_folds=folds, seed=seed, jobs=jobs,
                              progress=progress, evaluator=evaluator, measures=measure_names,
                              folds=given_folds)
            notes = (f"Data `{ds.name}` ({ds.n_samples} instances, {ds.n_features} features, "
                     f"{ds.n_labels} labels); methods {', '.join(names)}; GDS methods with lambda={lam}, "
                     f"relevance={relevance} (gds: calibration {DEFAULT_CALIBRATION!r}; cgds/dgds: "
                     f"the paper's eq. 2); evaluator {evaluator}; measures {', '.join(measure_names)}; "
                     f"seed {seed}; {jobs} job(s).")
        else:
            parts = []
            for name in (n for n in names if n in GREEDY_METHODS):
                parts.append(run_lambda_sweep(ds.X, ds.Y, lams, ks, method=name, relevance=relevance,
                                              n_folds=folds, seed=seed, jobs=jobs, progress=progress,
                                              evaluator=evaluator, measures=measure_names,
                                              folds=given_folds))
            df = pd.concat(parts, ignore_index=True)
            notes = (f"Data `{ds.name}`; lambda in {lams}; relevance={relevance}; evaluator {evaluator}; "
                     f"measures {', '.join(measure_names)}; seed {seed}; {jobs} job(s).")
    finally:
        shown.close()
    if ks == ["auto"]:  # the k each training fold chose, in the summary too
        chosen = df.groupby(["method", "fold"], sort=False)["k_chosen"].first()
        notes += " k auto (chosen on each training fold): " + "; ".join(
            f"{m} {', '.join(str(int(v)) for v in chosen[m])}" for m in dict.fromkeys(df["method"]))
        notes += "."
    for note in df.attrs.get("notes", []):
        click.echo(f"note: {note}", err=True)  # a warning: also with -q
    if split:
        notes += (f" Scored once on the given split: {ds.metadata.parts[0]} for training, "
                  f"{ds.metadata.parts[1]} for testing.")
    paths: list = []
    if out_dir is not None:
        from coreselect.io.files import final_outputs

        # Its last act: a signal after the report is in place finds a finished run.
        with shown.stage("writing the report"), final_outputs():
            paths = write_report(df, out_dir, dataset=ds.name, notes=notes, evaluator=evaluator)
    shown.close()
    from coreselect.evaluation.report import summary_text

    click.echo(summary_text(df))  # the results, also with -q (it silences progress and notes)
    if not quiet:
        for path in paths:
            click.echo(f"wrote {path}", err=True)


def _mulan_pair(data: str) -> tuple[str, str]:
    """DATA's Mulan train/test files: a dataset name's (from the registry), else the
    ``-train.arff`` / ``-test.arff`` files beside DATA's file (itself one of them, or the
    whole set: ``emotions.arff`` -> ``emotions-train.arff``, ``emotions-test.arff``)."""
    from pathlib import Path

    from coreselect.datasets import registry

    info = registry.find(data) if "." not in Path(data).name else None
    if info is not None:
        pair = registry.train_test_files(info)
        if pair is None:
            fail(f"--mulan-split: {info.name} has no train/test split of its own; give the test "
                 "set with --test FILE, or cross-validate (--folds)")
        return pair
    text = str(data)
    for suffix in (".arff.gz", ".arff.bz2", ".arff.xz", ".arff"):
        if text.lower().endswith(suffix):
            stem, ext = text[:-len(suffix)], text[-len(suffix):]
            break
    else:
        fail(f"--mulan-split: {data} is not an ARFF file or a dataset name; give the test set "
             "with --test FILE")
    for part in ("-train", "-test"):
        if stem.endswith(part):
            stem = stem[:-len(part)]
    return f"{stem}-train{ext}", f"{stem}-test{ext}"


def _with_test_set(train, test, test_name: str):
    """One dataset of the training rows, then the test rows, and the one split of them
    (``[(train rows, test rows)]``); the test set must have the training set's columns."""
    import numpy as np

    from coreselect.datasets.load import stack
    from coreselect.errors import DatasetError

    for what, a, b in (("features", train.feature_names, test.feature_names),
                       ("labels", train.label_names, test.label_names)):
        if list(a) != list(b):
            diff = next((f"{x!r} where the training set has {y!r}" for x, y in zip(b, a) if x != y),
                        f"{len(b)} where the training set has {len(a)}")
            raise DatasetError(f"the test set's {what} differ from the training set's: {diff}",
                               path=str(test_name))
    name = train.name or "data"
    for part in ("-train", "_train"):
        name = name[:-len(part)] if name.endswith(part) else name
    both = stack([train, test], name)
    n_train = train.n_samples
    return both, [(np.arange(n_train), np.arange(n_train, n_train + test.n_samples))]
