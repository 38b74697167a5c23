from cqels_endpoint.operators._base import Node
from cqels_endpoint.operators.base import Sink as PythonSink

class Sink(Node, PythonSink): ...
