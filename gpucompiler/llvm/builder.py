class Builder: pass
