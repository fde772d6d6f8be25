import numpy as np


def kernel(A, x):

    return (A @ x) @ A
