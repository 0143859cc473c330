"""``ferrograd.nn``: modules, parameters, functional ops, initialisation and utilities."""

from . import functional, init, modules, parallel, parameter, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
