"""A ZeroMQ XSUB/XPUB forwarder: the stand-in for the NATS server that carries Dynamo's event plane
in a cluster (tests/serving/test_dynamo_mocker.py).

Dynamo 1.1.1's zmq event plane publishes from each process on a socket of its own; given
`DYN_ZMQ_BROKER_URL="xsub=tcp://H:A , xpub=tcp://H:B"`, publishers connect to A and subscribers to
B instead, and a forwarder between the two delivers every event to every subscriber. This is that
forwarder and nothing more (zmq.proxy copies frames both ways, subscriptions included).

`python zmq_broker.py ADDRESS` (the Dynamo virtualenv's Python, which has pyzmq): binds both
sockets on ADDRESS only (the pod bridge's host address, never every interface), on ports the
kernel picks, prints `XSUB_PORT XPUB_PORT` on one line, and forwards until it is terminated.
Standard library and pyzmq only; nothing imported from the repository."""

from __future__ import annotations

import sys

import zmq  # type: ignore[import-not-found]  # in the Dynamo virtualenv, not in .venv


def main(address: str) -> None:
    context = zmq.Context()
    xsub = context.socket(zmq.XSUB)
    xpub = context.socket(zmq.XPUB)
    xsub_port = xsub.bind_to_random_port(f"tcp://{address}")
    xpub_port = xpub.bind_to_random_port(f"tcp://{address}")
    print(xsub_port, xpub_port, flush=True)
    zmq.proxy(xsub, xpub)


if __name__ == "__main__":
    main(sys.argv[1])
