"""The overlord side of Func's Python API: `func.overlord.client`."""
