# SPDX-License-Identifier: Apache-2.0
"""Integrations of mlOS with training frameworks built on PyTorch.

    from mlos_training.integrations.ultralytics import add_mlos_callbacks
"""
