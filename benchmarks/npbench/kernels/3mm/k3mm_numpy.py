import numpy as np


def kernel(A, B, C, D):

    return A @ B @ C @ D
