"""``ferrograd.nn``: modules, parameters, functional ops, initialisation and utilities."""

from .parameter import Buffer, Parameter
from .modules import *  # noqa: F401,F403
from . import functional, init, modules, parallel, parameter, utils  # noqa: F401
