from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "tasks_app"
    verbose_name = "Tasks"
