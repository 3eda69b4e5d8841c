"""``dataflow k8s``: render a pipeline as KubeRay / Spark Operator objects (or plain Jobs), submit, follow, delete."""
from __future__ import annotations

import click

from dataflow.cli.options import debug_option, handle_errors

__all__ = ["k8s"]


def _render_options(fn):
    options = [
        click.argument("pipeline", type=click.Path(dir_okay=False)),
        click.option("--cluster-config", type=click.Path(dir_okay=False), help="k8s.yaml with cluster settings; default: built-in defaults."),
        click.option("--namespace", help="Namespace of the objects; default: the config's, else 'default'."),
        click.option("--image", help="Image with dataflow installed; default: the config's, else dataflow:<version>."),
        click.option("--queue", help="Volcano queue; default: the config's, else none (no Volcano labels)."),
        click.option("--priority-class", help="PriorityClass of the job; default: the config's, else none."),
        click.option(
            "--profile", type=click.Choice(["default", "borrow"]),
            help="borrow: low priority and preemptible, on capacity other queues lend; default: the config's, else default.",
        ),
        click.option(
            "--target", type=click.Choice(["auto", "job"]), default="auto", show_default=True,
            help="auto: a RayJob / SparkApplication per stage; job: a plain Indexed Job of shards plus a commit Job (map-only pipelines).",
        ),
        click.option(
            "--shards", type=click.IntRange(1, 100_000),
            help="With --target job: the number of shards (pods of the Indexed Job); default: the config's job.shards, else 8.",
        ),
        debug_option,
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _client_options(fn):
    fn = click.option("--context", help="kubeconfig context; default: the current one.")(fn)
    return click.option("--kubeconfig", type=click.Path(dir_okay=False), help="kubeconfig file; default: ~/.kube/config, else in-cluster.")(fn)


def _render(pipeline, cluster_config, namespace, image, queue, priority_class, profile, target, shards):
    from dataflow.k8s.config import load_cluster_config
    from dataflow.k8s.render import render_pipeline

    config = load_cluster_config(
        cluster_config,
        **{
            "namespace": namespace, "image": image, "volcano.queue": queue, "volcano.priority_class": priority_class,
            "volcano.profile": profile, "job.shards": shards,
        },
    )
    return render_pipeline(pipeline, config, config_file=cluster_config, target=target)


@click.group()
def k8s() -> None:
    """Run pipelines on Kubernetes: a KubeRay RayJob or a Spark Operator SparkApplication, optionally on Volcano.

    \b
    Examples:
      dataflow k8s render pipelines/thumbnails.yaml
      dataflow k8s render p.yaml --queue ai-data --profile borrow -o json
      dataflow k8s render p.yaml --target job --shards 64
      dataflow k8s submit p.yaml --cluster-config k8s.yaml --dry-run
      dataflow k8s status p.yaml --watch 3600
    """


@k8s.command()
@_render_options
@click.option("-o", "--output", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True, help="Output format.")
@handle_errors
def render(pipeline, cluster_config, namespace, image, queue, priority_class, profile, target, shards, output):
    """Print PIPELINE's objects (validated against the CRD schemas), ready for kubectl apply -f -.

    \b
    Examples:
      dataflow k8s render pipelines/thumbnails.yaml | kubectl apply -f -
      dataflow k8s render p.yaml --queue ai-data --profile borrow -o json
      dataflow k8s render p.yaml --target job --shards 64
    """
    rendered = _render(pipeline, cluster_config, namespace, image, queue, priority_class, profile, target, shards)
    if rendered.extras:
        click.echo(f"dataflow: the image needs dataflow[{','.join(rendered.extras)}] for this pipeline's ops", err=True)
    click.echo(rendered.to_yaml() if output == "yaml" else rendered.to_json(), nl=output == "json")


@k8s.command()
@_render_options
@_client_options
@click.option("--dry-run", is_flag=True, help="Server-side dry run: the API server checks everything, stores nothing.")
@click.option("--wait", "wait_s", type=float, help="Follow the jobs until they finish, for at most this many seconds.")
@handle_errors
def submit(pipeline, cluster_config, namespace, image, queue, priority_class, profile, target, shards, kubeconfig, context, dry_run, wait_s):
    """Create PIPELINE's objects in the cluster (exit 1 if the API server refuses one or a waited-for job fails).

    With --target job the commit Job is created suspended; --wait resumes it once every shard has succeeded.

    \b
    Examples:
      dataflow k8s submit pipelines/thumbnails.yaml --cluster-config k8s.yaml --dry-run
      dataflow k8s submit p.yaml --context prod-b --wait 3600
    """
    from dataflow.k8s.submit import kube_client, submit as submit_objects, wait

    rendered = _render(pipeline, cluster_config, namespace, image, queue, priority_class, profile, target, shards)
    api = kube_client(kubeconfig, context)
    suffix = " (dry run)" if dry_run else ""
    submit_objects(rendered, api, dry_run=dry_run, on_done=lambda done: click.echo(f"{done.kind}/{done.name}: {done.note}{suffix}"))
    if wait_s is not None and not dry_run:
        wait(rendered, api, timeout=wait_s, on_change=lambda state: click.echo(str(state)), resume=True)


@k8s.command()
@_render_options
@_client_options
@click.option("--watch", "watch_s", type=float, help="Keep polling until the jobs finish, for at most this many seconds.")
@click.option("--interval", type=float, default=10.0, show_default=True, help="Seconds between polls with --watch.")
@handle_errors
def status(pipeline, cluster_config, namespace, image, queue, priority_class, profile, target, shards, kubeconfig, context, watch_s, interval):
    """Print the status of PIPELINE's jobs (RayJob jobDeploymentStatus, SparkApplication state, Job conditions).

    With --watch on --target job, the watch ends when only the suspended commit Job is left.

    \b
    Examples:
      dataflow k8s status pipelines/thumbnails.yaml --cluster-config k8s.yaml
      dataflow k8s status p.yaml --target job --shards 64 --watch 3600
    """
    from dataflow.k8s.submit import job_states, kube_client, wait

    rendered = _render(pipeline, cluster_config, namespace, image, queue, priority_class, profile, target, shards)
    api = kube_client(kubeconfig, context)
    if watch_s is None:
        for state in job_states(rendered, api):
            click.echo(str(state))
    else:
        wait(rendered, api, timeout=watch_s, interval=interval, on_change=lambda state: click.echo(str(state)))


@k8s.command()
@_render_options
@_client_options
@click.option("--tail", type=int, help="Only the last N lines.")
@handle_errors
def logs(pipeline, cluster_config, namespace, image, queue, priority_class, profile, target, shards, kubeconfig, context, tail):
    """Print the driver log of PIPELINE's jobs.

    \b
    Examples:
      dataflow k8s logs pipelines/thumbnails.yaml --cluster-config k8s.yaml --tail 100
    """
    from dataflow.k8s.submit import job_logs, kube_client

    rendered = _render(pipeline, cluster_config, namespace, image, queue, priority_class, profile, target, shards)
    for ref, text in job_logs(rendered, kube_client(kubeconfig, context), tail_lines=tail).items():
        click.echo(f"==> {ref} <==")
        click.echo(text, nl=not text.endswith("\n"))


@k8s.command()
@_render_options
@_client_options
@click.option("--dry-run", is_flag=True, help="Server-side dry run.")
@handle_errors
def delete(pipeline, cluster_config, namespace, image, queue, priority_class, profile, target, shards, kubeconfig, context, dry_run):
    """Delete PIPELINE's jobs and ConfigMap (the Volcano queue stays).

    \b
    Examples:
      dataflow k8s delete pipelines/thumbnails.yaml --cluster-config k8s.yaml --dry-run
    """
    from dataflow.k8s.submit import delete as delete_objects, kube_client

    rendered = _render(pipeline, cluster_config, namespace, image, queue, priority_class, profile, target, shards)
    for done in delete_objects(rendered, kube_client(kubeconfig, context), dry_run=dry_run):
        click.echo(f"{done.kind}/{done.name}: {done.note}")
