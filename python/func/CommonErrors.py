"""Func's exceptions (func.CommonErrors), as Func's programs import them."""


class Func_Client_Exception(Exception):
    """What Func's client raised: a SPEC matching no minion, credentials
    that cannot be read."""

    def __init__(self, value=None):
        Exception.__init__(self, value)
        self.value = value

    def __str__(self):
        return "%s" % (self.value,)
