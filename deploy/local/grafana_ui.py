#!/usr/bin/env python3
"""Grafana's web UI for the local stack: the frontend bundle (public/build), built once from the
same Go module version as the backend stack.py builds, into a tree the stack's Grafana serves.

    python deploy/local/grafana_ui.py build            # once: ~2.5 min install, ~2 min webpack
    python deploy/local/grafana_ui.py build --force    # again, reusing its caches (~30 s)
    python deploy/local/grafana_ui.py build --clean    # again, from a fresh copy of grafana/home

The tree is grafana/ui in the state directory: a writable copy of grafana/home (the module copy
the backend runs with) plus the frontend build. stack.py's start_grafana_instance passes it as
``--homepath`` once grafana/ui/ui.stamp names this module version (grafana_homepath()), else
grafana/home (API only, blank UI page); a server started before the build serves the UI from its
next start. A separate tree, not grafana/home itself: the running backend's homepath and the
backend build's workspace stay untouched, a failed or half-done build changes nothing the stack
uses, and the stamp is written last.

The steps (log: logs/build-grafana-ui.log in the state directory, like stack.py's build logs):

1. Yarn 3.8 from the npm registry (@yarnpkg/cli-dist, exact version and sha512 pinned, checked
   against the registry's integrity), used through YARN_YARN_PATH: the Yarn 3.4.1 committed in
   the module fails under Node 20. Packages come from ``npm config get registry``.
2. package.json's ``xlsx`` is a vendor CDN tarball: the npm registry's xlsx@0.18.5 instead
   (``yarn install`` without --immutable updates yarn.lock).
3. public/vendor/, dropped from the Go module zip (zips omit vendor/ directories): the files the
   webpack build imports (flot 0.8.3 and bootstrap-tagsinput 0.7.1 from npm, shims for the rest).
4. ``yarn install``, ``yarn build`` (webpack, production), each under /usr/bin/time -v when there
   (its peak RSS is logged), then the stamp: module and tool versions; a second run with the same
   stamp is a no-op.

Standard library only, like stack.py (whose Config, logging and errors it uses). A user error
(no Node.js or npm) is one line and exit 2; a failed step is exit 1 with the log's last lines.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import IO, Any


def _load_stack() -> ModuleType:
    """deploy/local/stack.py (not a package), under the name the test fixtures import it by."""
    name = "drainwatch_local_stack"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("stack.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


stack = _load_stack()


@dataclass(frozen=True, slots=True)
class NpmPin:
    """One package tarball from the npm registry: exact version and its sha512 (``npm view``)."""

    name: str
    version: str
    integrity: str

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"


YARN = NpmPin(
    "@yarnpkg/cli-dist",
    "3.8.7",
    "sha512-YMoAlLR9f+kxXjK72ggBIidi3ulQQrQpMSxzrLUt0OUk9Xdst2v26LBSYFlzOm+7KRNWgYIJpFjA8uRnCgB5xQ==",
)
FLOT = NpmPin(
    "flot",
    "0.8.3",
    "sha512-xg2otcTJDvS+ERK+my4wxG/ASq90QURXtoM4LhacCq0jQW2jbyjdttbRNqU2cPykrpMvJ6b2uSp6SAgYAzj9tQ==",
)
TAGSINPUT = NpmPin(
    "bootstrap-tagsinput",
    "0.7.1",
    "sha512-xSks67GWgXLnmO5gqp788vhh7WoXd9mHj5uKE5zg8rvw3sNYYSCjrSlrPRlPdpYKwmuxeuf2jsNjBSWEucyB1w==",
)
XLSX_VERSION = "0.18.5"
# Bump when a step below changes what the tree holds: the stamp differs, the next build reruns.
STEPS = 1
NODE_MIN = 18  # package.json "engines"
STAMP = "ui.stamp"  # stack.grafana_homepath() reads its "module"
SOURCE = "source.stamp"  # the backend stamp of the grafana/home the tree was copied from

# The flot 0.8.3 files Grafana's sources import as vendor/flot/<name>.js (public/app/plugins/
# panel/graph/graph.ts, public/app/features/plugins/plugin_loader.ts); Grafana's repo vendored
# flot 0.8 with these unchanged but for small fixes.
FLOT_FILES = (
    "jquery.flot.js",
    "jquery.flot.selection.js",
    "jquery.flot.time.js",
    "jquery.flot.stack.js",
    "jquery.flot.crosshair.js",
)

# Grafana's own flot plugins, in its repo's public/vendor/flot/ and on no registry. Only the
# deprecated Graph panel (and the removed singlestat's gauge) draw with them; a stub registers
# the plugin's name so the imports resolve, and those options draw nothing.
FLOT_STUBS = {
    "jquery.flot.gauge.js": "gauge",
    "jquery.flot.fillbelow.js": "fillbelow",
    "jquery.flot.dashes.js": "dashes",
    "jquery.flot.stackpercent.js": "stackpercent",
}

FLOT_STUB = """\
/*
 * Stub of Grafana's flot plugin "{name}" (public/vendor/flot/{file} in Grafana's repository).
 * The Go module zip drops vendor/ directories and the plugin is on no package registry; only
 * the deprecated Graph panel uses it. Written by deploy/local/grafana_ui.py: it registers the
 * plugin so the imports resolve; its series options draw nothing.
 */
(function ($) {{
  'use strict';
  if ($ && $.plot && $.plot.plugins) {{
    var plugin = {{ init: function () {{}}, options: {{}}, name: '{name}', version: 'stub' }};
    $.plot.plugins.push(plugin);
  }}
}})(window.jQuery);
"""

# Bootstrap 2.3's jQuery plugins (public/vendor/bootstrap/bootstrap.js in Grafana's repository,
# imported by public/app/angular/AngularApp.ts). Bootstrap 2 is not on the npm registry and
# Bootstrap 3's plugins differ (data key "bs.<name>", DEFAULTS). Grafana's Angular code (legacy
# panels and query editors) reads $.fn.tooltip.defaults, $.fn.<name>.Constructor.prototype,
# element.data('tooltip' | 'typeahead') and tooltip.tip(): the shim keeps that shape.
BOOTSTRAP_SHIM = """\
/*
 * Stand-in for Bootstrap 2.3's jQuery plugins, written by deploy/local/grafana_ui.py. Grafana's
 * repository vendors Bootstrap 2 in public/vendor/bootstrap/; the Go module zip drops vendor/
 * directories and Bootstrap 2 is not on the npm registry. Grafana 10's React UI does not use
 * these; its Angular code (legacy panels, some query editors) reads $.fn.tooltip.defaults,
 * $.fn.modal.Constructor.prototype, element.data('tooltip' | 'typeahead') and tooltip.tip().
 * Each plugin keeps Bootstrap's shape (instance in .data(name), string commands, .defaults,
 * .Constructor, .noConflict) and draws nothing: no tooltip, popover, modal or typeahead menu.
 */
(function ($) {
  'use strict';

  function define(name, methods, defaults) {
    function Plugin(element, options) {
      this.type = name;
      this.$element = $(element);
      this.options = $.extend({}, $.fn[name].defaults, options || {});
      this.enabled = true;
      // typeahead: Bootstrap copies these options onto the instance (Grafana overrides lookup)
      this.source = this.options.source;
      this.matcher = this.options.matcher || this.matcher;
      this.updater = this.options.updater || this.updater;
    }
    $.each(methods, function (i, method) {
      Plugin.prototype[method] = function () {
        return this;
      };
    });
    Plugin.prototype.tip = function () {
      return (this.$tip = this.$tip || $(this.options.template || '<div></div>'));
    };
    Plugin.prototype.process = function () {
      return this;
    };
    var old = $.fn[name];
    $.fn[name] = function (option) {
      var args = Array.prototype.slice.call(arguments, 1);
      return this.each(function () {
        var $this = $(this);
        var data = $this.data(name);
        if (!data) {
          $this.data(name, (data = new Plugin(this, typeof option === 'object' && option)));
        }
        if (typeof option === 'string' && typeof data[option] === 'function') {
          data[option].apply(data, args);
        }
      });
    };
    $.fn[name].defaults = defaults;
    $.fn[name].Constructor = Plugin;
    $.fn[name].noConflict = function () {
      $.fn[name] = old;
      return this;
    };
  }

  var tip = ['show', 'hide', 'toggle', 'enter', 'leave', 'enable', 'disable', 'toggleEnabled',
    'destroy', 'fixTitle', 'getTitle', 'setContent', 'getPosition', 'hasContent', 'validate'];
  define('tooltip', tip, {
    animation: true,
    placement: 'top',
    selector: false,
    template:
      '<div class="tooltip"><div class="tooltip-arrow"></div>' +
      '<div class="tooltip-inner"></div></div>',
    trigger: 'hover focus',
    title: '',
    delay: 0,
    html: false,
    container: false,
  });
  define('popover', tip.concat(['getContent']), {
    animation: true,
    placement: 'right',
    selector: false,
    template:
      '<div class="popover"><div class="arrow"></div><h3 class="popover-title"></h3>' +
      '<div class="popover-content"></div></div>',
    trigger: 'click',
    title: '',
    content: '',
    delay: 0,
    html: false,
    container: false,
  });
  define('modal', ['show', 'hide', 'toggle', 'enforceFocus', 'escape', 'backdrop'], {
    backdrop: true,
    keyboard: true,
    show: true,
  });
  define('typeahead', ['show', 'hide', 'lookup', 'select', 'render', 'next', 'prev', 'listen',
    'matcher', 'sorter', 'highlighter', 'updater'], {
    source: [],
    items: 8,
    menu: '<ul class="typeahead dropdown-menu"></ul>',
    item: '<li><a href="#"></a></li>',
    minLength: 1,
  });
  define('dropdown', ['toggle', 'keydown'], {});
  define('collapse', ['show', 'hide', 'toggle', 'reset', 'dimension'], { toggle: true });
  define('tab', ['show', 'activate'], {});
  define('button', ['setState', 'toggle'], { loadingText: 'loading...' });
  define('alert', ['close'], {});
})(require('jquery'));
"""

# vendor/plugin-text/text.js is not written: Grafana names it only in a SystemJS map
# (plugin_loader.ts) for external Angular plugins that load "text!" templates at run time; the
# webpack build does not import it and the stack installs no such plugin.


_log = logging.getLogger("drainwatch.grafana_ui")


def setup_logging(fmt: str | None = None) -> None:
    """Log lines on stderr in stack.py's format (its own too), component ``grafana_ui``."""
    stack.setup_logging(fmt)
    _log.handlers[:] = stack._log.handlers
    _log.setLevel(logging.INFO)
    _log.propagate = False


def _say(msg: str, level: int = logging.INFO) -> None:
    if not _log.handlers:
        setup_logging()
    _log.log(level, "%s", msg)


class UsageError(Exception):
    """A mistake the user can fix (a missing tool); printed as one line, exit 2."""


class BuildLog:
    """logs/build-grafana-ui.log: the commands with their output, and the progress lines that
    also go to stderr in stack.py's log format."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.out: IO[bytes] = stack._private_log(path, "wb")

    def __enter__(self) -> BuildLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.out.close()

    def say(self, msg: str, level: int = logging.INFO) -> None:
        _say(msg, level)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.write(f"\n# {stamp} {msg}\n")

    def write(self, text: str) -> None:
        self.out.write(text.encode())
        self.out.flush()

    def fail(self, what: str) -> stack.StackError:
        return stack.StackError(f"{what}; {self.path}:\n{stack._tail(self.path)}")

    def run(
        self, cmd: list[str], cwd: Path, env: dict[str, str] | None = None, *, timed: bool = False
    ) -> dict[str, float]:
        """Run `cmd` with its output in the log; raise StackError on a non-zero exit. With
        `timed`, under /usr/bin/time -v: returns {"seconds", "peak_rss_mb"} of the command."""
        t0 = time.monotonic()
        times = self.path.with_name(self.path.name + ".time")
        timer = shutil.which("time", path="/usr/bin") if timed else None
        full = [timer, "-v", "-o", str(times), *cmd] if timer else cmd
        self.write(f"\n$ {' '.join(cmd)}   (in {cwd})\n")
        rc = subprocess.call(
            full,
            stdin=subprocess.DEVNULL,
            stdout=self.out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
        )
        result = {"seconds": time.monotonic() - t0}
        failed = self.fail(f"`{' '.join(cmd)}` failed (exit {rc})") if rc else None  # its output
        if timer and times.exists():
            report = times.read_text()
            times.unlink()
            self.write(report)
            peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", report)
            if peak:
                result["peak_rss_mb"] = int(peak.group(1)) / 1024
        if failed:
            raise failed
        return result


# --- paths and the stamp --------------------------------------------------------------------


def expected_stamp(node_version: str) -> dict[str, Any]:
    """What the tree's ui.stamp holds once built: the module and every step's version."""
    return {
        "module": f"{stack.GRAFANA_MODULE}@{stack.GRAFANA_VERSION}",
        "release": stack.GRAFANA_RELEASE,
        "node": node_version,
        "yarn": YARN.version,
        "xlsx": XLSX_VERSION,
        "flot": FLOT.version,
        "bootstrap-tagsinput": TAGSINPUT.version,
        "steps": STEPS,
    }


def read_stamp(tree: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads((tree / STAMP).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _tree_bytes(path: Path) -> int:
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(d, f)).st_size
    return total


@contextlib.contextmanager
def _build_lock(cfg: Any) -> Iterator[None]:
    """One build at a time per state directory (a second waits)."""
    cfg.grafana_dir.mkdir(parents=True, exist_ok=True)
    with open(cfg.grafana_dir / "ui.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# --- the steps ------------------------------------------------------------------------------


def node_version() -> str:
    """`node --version` (v18 or newer) with npm beside it, else UsageError."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        raise UsageError("Node.js 18+ and npm are needed (apt-get install nodejs npm)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    match = re.match(r"v(\d+)\.", version)
    if not match or int(match.group(1)) < NODE_MIN:
        raise UsageError(f"Node.js {NODE_MIN}+ is needed, found {version or 'no version'}")
    return version


def npm_registry() -> str:
    run = subprocess.run(["npm", "config", "get", "registry"], capture_output=True, text=True)
    registry = run.stdout.strip().rstrip("/")
    if run.returncode != 0 or not registry.startswith(("http://", "https://")):
        raise UsageError(f"`npm config get registry` gave no registry URL: {run.stderr.strip()}")
    return registry


def _sha512(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def fetch_tarball(pin: NpmPin, dest: Path, log: BuildLog) -> Path:
    """The package's tarball from the npm registry via `npm pack`, into `dest` (kept there: a
    rebuild reuses it), checked against the pinned sha512 and the registry's integrity."""
    dest.mkdir(parents=True, exist_ok=True)
    tgz = dest / (pin.name.lstrip("@").replace("/", "-") + f"-{pin.version}.tgz")
    if tgz.exists() and _sha512(tgz) == pin.integrity:
        return tgz
    view = subprocess.run(["npm", "view", pin.spec, "dist", "--json"], capture_output=True)
    log.write(f"\n$ npm view {pin.spec} dist --json\n")
    log.out.write(view.stdout + view.stderr)
    try:
        dist = json.loads(view.stdout)
        registry_integrity, registry_shasum = dist["integrity"], dist["shasum"]
    except (ValueError, KeyError, TypeError):
        raise log.fail(f"the npm registry has no {pin.spec}") from None
    if registry_integrity != pin.integrity:
        raise log.fail(
            f"{pin.spec}: the registry's integrity {registry_integrity} is not the pinned "
            f"{pin.integrity}"
        )
    log.run(["npm", "pack", pin.spec, "--pack-destination", str(dest), "--json"], dest)
    if not tgz.exists():
        raise log.fail(f"npm pack {pin.spec} wrote no {tgz.name}")
    got, shasum = _sha512(tgz), hashlib.sha1(tgz.read_bytes()).hexdigest()
    if got != pin.integrity or shasum != registry_shasum:
        tgz.unlink()
        raise log.fail(f"{tgz.name}: sha512 {got} / sha1 {shasum} differ from the registry's")
    log.write(f"verified {tgz.name}: {got} sha1 {shasum}\n")
    return tgz


def _tar_member(tgz: Path, member: str) -> bytes:
    with tarfile.open(tgz) as tar:
        fh = tar.extractfile(member)
        if fh is None:
            raise stack.StackError(f"{tgz} has no file {member}")
        return fh.read()


def copy_tree(cfg: Any, tree: Path, clean: bool, log: BuildLog) -> None:
    """grafana/home into the tree, unless the tree already holds a copy of this home (a rebuild
    keeps its caches: .yarn/cache, webpack's .yarn/.cache)."""
    source = (cfg.grafana_dir / "build.stamp").read_text().strip()
    with contextlib.suppress(OSError):
        if not clean and (tree / SOURCE).read_text().strip() == source:
            return
    log.say(f"copying {cfg.grafana_home} to {tree}")
    partial = tree.with_name(tree.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(cfg.grafana_home, partial, symlinks=True)
    (partial / SOURCE).write_text(source + "\n")
    shutil.rmtree(tree, ignore_errors=True)
    os.replace(partial, tree)


def use_registry_xlsx(tree: Path, log: BuildLog) -> None:
    """package.json's xlsx: the CDN tarball Grafana pins is off the registries; xlsx@0.18.5,
    the last version on the npm registry, has the same read/write API Grafana uses."""
    path = tree / "package.json"
    text = path.read_text()
    current = json.loads(text).get("dependencies", {}).get("xlsx")
    if current == XLSX_VERSION:
        return
    if not current:
        raise stack.StackError(f"{path} has no dependency xlsx: is this Grafana 10.0?")
    old = f'"xlsx": {json.dumps(current)}'
    if text.count(old) != 1:
        raise stack.StackError(f"{path}: no single {old} to replace")
    path.write_text(text.replace(old, f'"xlsx": "{XLSX_VERSION}"'))
    log.write(f"package.json: xlsx {current} -> {XLSX_VERSION}\n")


def write_vendor(tree: Path, flot: Path, tagsinput: Path) -> list[str]:
    """public/vendor/: the paths Grafana's sources import as vendor/... (public/app, resolved
    by webpack from public/). Returns the files written, relative to public/vendor."""
    vendor = tree / "public" / "vendor"
    files: dict[str, bytes] = {}
    for name in FLOT_FILES:  # flot 0.8.3 itself, from npm
        files[f"flot/{name}"] = _tar_member(flot, f"package/{name}")
    for name, plugin in FLOT_STUBS.items():
        files[f"flot/{name}"] = FLOT_STUB.format(name=plugin, file=name).encode()
    # bootstrap-tagsinput 0.7.1 from npm (app/angular/tags.ts; the tag editor of legacy editors)
    files["tagsinput/bootstrap-tagsinput.js"] = _tar_member(
        tagsinput, "package/dist/bootstrap-tagsinput.js"
    )
    files["bootstrap/bootstrap.js"] = BOOTSTRAP_SHIM.encode()
    for rel, data in files.items():
        (vendor / rel).parent.mkdir(parents=True, exist_ok=True)
        (vendor / rel).write_bytes(data)
    return sorted(files)


def yarn_env(cfg: Any, yarn: Path, registry: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "YARN_YARN_PATH": str(yarn),  # over .yarnrc.yml's 3.4.1, which fails under Node 20
            "YARN_NPM_REGISTRY_SERVER": registry,
            "YARN_ENABLE_IMMUTABLE_INSTALLS": "false",  # yarn.lock changes (xlsx); CI=true flips it
            "YARN_ENABLE_PROGRESS_BARS": "false",
            "YARN_ENABLE_TELEMETRY": "0",
            # postinstall runs `husky install`: off, it would point a git repository's hooks at
            # the tree; and git inside the tree must not find the repository around .drainwatch
            "HUSKY": "0",
            "GIT_CEILING_DIRECTORIES": str(cfg.grafana_dir),
            # cypress (Grafana's e2e tests) downloads its app in postinstall, from a host no
            # registry; the build does not need it
            "CYPRESS_INSTALL_BINARY": "0",
        }
    )
    # webpack needs more than Node's default heap; Grafana's Dockerfile gives it the same
    env.setdefault("NODE_OPTIONS", "--max-old-space-size=8000")
    env.pop("NODE_ENV", None)  # the build script sets production itself
    return env


def build(force: bool = False, clean: bool = False) -> str:
    """Build the web UI tree unless its stamp says it is built (`force`: rebuild in the tree,
    `clean`: from a fresh copy of grafana/home). Returns a one-line summary."""
    cfg = stack.Config.from_env()
    node = node_version()
    registry = npm_registry()
    tree: Path = stack.grafana_ui_dir(cfg)
    want = expected_stamp(node)
    if not (force or clean) and read_stamp(tree) == want:
        return f"already built: {tree} (python deploy/local/grafana_ui.py build --force to rebuild)"
    with stack._locked(cfg):  # the backend and its home, as `stack.py start` builds them
        stack.ensure_grafana(cfg)
    t0 = time.monotonic()
    with _build_lock(cfg), BuildLog(cfg.logs / "build-grafana-ui.log") as log:
        log.say(
            f"building Grafana's web UI {stack.GRAFANA_RELEASE} into {tree} with Node {node} "
            f"(first build ~4 min on 2 cores, ~4.5 GB; log: {log.path})"
        )
        with contextlib.suppress(FileNotFoundError):
            (tree / STAMP).unlink()  # until the end: the stack serves grafana/home
        copy_tree(cfg, tree, clean, log)
        tools = cfg.grafana_dir / "tools"
        yarn_tgz = fetch_tarball(YARN, tools / "npm", log)
        yarn = tools / f"yarn-{YARN.version}.cjs"
        yarn.write_bytes(_tar_member(yarn_tgz, "package/bin/yarn.js"))
        flot = fetch_tarball(FLOT, tools / "npm", log)
        tagsinput = fetch_tarball(TAGSINPUT, tools / "npm", log)
        use_registry_xlsx(tree, log)
        written = write_vendor(tree, flot, tagsinput)
        log.write("public/vendor: " + ", ".join(written) + "\n")
        env = yarn_env(cfg, yarn, registry)
        yarn_cmd = [shutil.which("node") or "node", str(yarn)]
        log.say(f"yarn {YARN.version} install (packages from {registry})")
        install = log.run([*yarn_cmd, "install"], tree, env, timed=True)
        log.say("yarn build (webpack, production)")
        webpack = log.run([*yarn_cmd, "build"], tree, env, timed=True)
        index = tree / "public" / "views" / "index.html"
        if not (tree / "public" / "build").is_dir() or not index.is_file():
            raise log.fail("yarn build wrote no public/build or public/views/index.html")
        stack._write_text(tree / STAMP, json.dumps(want, indent=2) + "\n")
        mb = 1024 * 1024
        figures = (
            f"install {install['seconds']:.0f}s (peak {install.get('peak_rss_mb', 0):.0f} MB), "
            f"build {webpack['seconds']:.0f}s (peak {webpack.get('peak_rss_mb', 0):.0f} MB), "
            f"public/build {_tree_bytes(tree / 'public' / 'build') / mb:.0f} MB, "
            f"tree {_tree_bytes(tree) / mb:.0f} MB"
        )
        log.say(f"built in {time.monotonic() - t0:.0f}s: {figures}")
    return f"built: {tree}; (re)start Grafana to serve it (stack.py stop, stack.py start)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="grafana_ui.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--log-format", choices=stack.LOG_FORMATS, default=None)
    sub = parser.add_subparsers(dest="command", required=True)
    p_build = sub.add_parser("build", help="build the web UI once (a no-op when built)")
    p_build.add_argument("--force", action="store_true", help="rebuild, reusing the caches")
    p_build.add_argument(
        "--clean", action="store_true", help="rebuild from a fresh copy of grafana/home"
    )
    args = parser.parse_args(argv)
    setup_logging(args.log_format)
    try:
        _say(build(force=args.force, clean=args.clean))
    except UsageError as exc:
        print(f"grafana_ui.py {args.command}: {exc}", file=sys.stderr)
        return 2
    except stack.StackError as exc:
        _say(f"{exc}", logging.ERROR)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
