"""Fixtures of the k8s tests: the recording API server on 127.0.0.1 and a kubeconfig pointing at it."""
from __future__ import annotations

import pytest

from tests.unit.k8s.fake_apiserver import FakeApiServer


@pytest.fixture
def api_server():
    """The recording API server (the only mock of the k8s tests), started on a free loopback port."""
    server = FakeApiServer()
    server.url = server.start()
    yield server
    server.stop()


@pytest.fixture
def kubeconfig(api_server, tmp_path) -> str:
    """A kubeconfig file pointing the real kubernetes client at ``api_server``."""
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: fake, cluster: {{server: '{api_server.url}'}}}}]\n"
        "users: [{name: fake, user: {token: dummy-token}}]\n"
        "contexts: [{name: fake, context: {cluster: fake, user: fake, namespace: data}}]\n"
        "current-context: fake\n"
    )
    return str(path)
