"""The deployment files (``deploy/``), validated as far as this machine can without a container
engine or a cluster: every YAML parses into what its engine expects, HAProxy accepts the compose
config and it is the package's template rendered for the compose services, and the Dockerfile
installs as the README does."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from viz_transformer.serve.config import Replica, find_haproxy, render

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def _yaml(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def _k8s() -> dict[str, dict]:
    docs = [d for p in sorted((DEPLOY / "k8s").glob("*.yaml")) for d in _yaml(p)]
    return {d["kind"]: d for d in docs}


def _apps(services: dict[str, dict]) -> list[str]:
    return sorted(n for n in services if n not in ("haproxy", "postgres"))


def test_every_yaml_parses():
    paths = [DEPLOY / "compose.yaml", *sorted((DEPLOY / "k8s").glob("*.yaml"))]
    assert len(paths) == 5
    for path in paths:
        assert _yaml(path), path


def test_kubernetes_probes_readiness_and_keeps_a_browser_on_its_pod():
    k8s = _k8s()
    deploy, service, ingress = k8s["Deployment"], k8s["Service"], k8s["Ingress"]
    pod = deploy["spec"]["template"]
    assert deploy["spec"]["selector"]["matchLabels"] == pod["metadata"]["labels"]
    assert service["spec"]["selector"] == pod["metadata"]["labels"]
    (app,) = pod["spec"]["containers"]
    assert app["readinessProbe"]["httpGet"]["path"] == "/_stcore/health"
    assert app["ports"][0]["containerPort"] == 8501
    notes = ingress["metadata"]["annotations"]
    prefix = "nginx.ingress.kubernetes.io/"
    assert notes[prefix + "affinity"] == "cookie" and notes[prefix + "session-cookie-name"]
    assert int(notes[prefix + "proxy-read-timeout"]) >= 3600  # websockets stay open
    assert int(notes[prefix + "proxy-send-timeout"]) >= 3600
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == service["metadata"]["name"]


@pytest.mark.needs("haproxy")
def test_compose_runs_the_replicas_behind_haproxy_with_the_packages_config(tmp_path):
    services = _yaml(DEPLOY / "compose.yaml")[0]["services"]
    apps = _apps(services)
    assert len(apps) >= 2 and all(services[n]["build"]["dockerfile"] == "deploy/Dockerfile"
                                  for n in apps)  # fmt: skip
    assert set(services["haproxy"]["depends_on"]) == set(apps)
    assert "./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro" in services["haproxy"]["volumes"]
    config = (DEPLOY / "haproxy.cfg").read_text()
    replicas = [Replica(n, 8501, n) for n in apps]
    expected = render(replicas, "0.0.0.0", 8501, Path("/tmp/haproxy.sock"), "127.0.0.11:53")
    assert config == expected, "regenerate it: python -m viz_transformer.serve.config " + " ".join(
        f"{n}:8501" for n in apps
    )
    check = subprocess.run([find_haproxy(), "-c", "-f", str(DEPLOY / "haproxy.cfg")],
                           capture_output=True, text=True)  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr


def _readme_install() -> list[str]:
    """The steps of the README's command that starts the app, up to the start itself
    (``python -m viz_transformer app``: ``streamlit run app.py`` warming Home meanwhile)."""
    start = "-m viz_transformer app"
    for line in (ROOT / "README.md").read_text().splitlines():
        if "pip install" in line and start in line:
            steps = [s.strip() for s in line.split("&&")]
            return [s for s in steps if start not in s]
    raise AssertionError("README.md has no one-line command that installs and starts the app")


def test_the_dockerfile_installs_as_the_readme_does_and_checks_health():
    text = (DEPLOY / "Dockerfile").read_text()
    runs = [ln.removeprefix("RUN ").strip() for ln in text.splitlines() if ln.startswith("RUN ")]
    install = _readme_install()
    assert any([s.strip() for s in run.split("&&")] == install for run in runs), install
    healthcheck = text.split("\nHEALTHCHECK ", 1)[1].split("\n#", 1)[0]  # with its CMD line
    assert "/_stcore/health" in healthcheck
    for copied in re.findall(r"^COPY (.+) \S+$", text, flags=re.M):
        for path in copied.split():
            assert (ROOT / path).exists(), f"the Dockerfile copies {path}, which is missing"
    assert "viz_transformer.serve.replica" in text  # the model is loaded before it is healthy


def test_every_replica_shares_one_postgres_for_the_classes():
    """compose: the replicas' VT_DATABASE_URL names the postgres service with its own user,
    database and password variable, and waits for it; Kubernetes: the URL comes from a Secret
    that deploy/k8s defines."""
    services = _yaml(DEPLOY / "compose.yaml")[0]["services"]
    db = services["postgres"]
    env = db["environment"]
    assert db["image"].startswith("postgres:") and "pg_isready" in " ".join(
        db["healthcheck"]["test"]
    )
    password = env["POSTGRES_PASSWORD"]
    for name in _apps(services):
        url = services[name]["environment"]["VT_DATABASE_URL"]
        user_password, _, rest = url.removeprefix("postgresql://").partition("@")
        assert user_password == f"{env['POSTGRES_USER']}:{password}"  # the same variable
        assert rest == f"postgres:5432/{env['POSTGRES_DB']}"
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert any(v.endswith(":/var/lib/postgresql/data") for v in db["volumes"])
    k8s = _k8s()
    (app,) = k8s["Deployment"]["spec"]["template"]["spec"]["containers"]
    (ref,) = [e["valueFrom"]["secretKeyRef"] for e in app["env"] if e["name"] == "VT_DATABASE_URL"]
    secret = k8s["Secret"]
    assert secret["metadata"]["name"] == ref["name"]
    assert secret["stringData"][ref["key"]].startswith("postgresql://")
